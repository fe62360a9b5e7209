/* report_html_page.c — the page every --html file is (see html.h): escaping, the number cells
 * that read the result tree, chart boxes and their data, CDF points, and the shell that puts
 * styles, Chart.js, the data and the one script around a body. Chart.js is read from Debian's
 * file when the page is written, not compiled in: one copy on the machine, updated with the
 * package, and a missing package is one message naming it, before a run (ls_html_check). */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/outfile.h"
#include "base/stats.h"
#include "report/html_int.h"

int lp_init(struct ls_page *p)
{
	memset(p, 0, sizeof(*p));
	p->charts = cJSON_CreateArray();
	return p->charts ? 0 : -ENOMEM;
}

void lp_free(struct ls_page *p)
{
	ls_strbuf_free(&p->body);
	cJSON_Delete(p->charts);
	p->charts = NULL;
}

void lp_puts(struct ls_page *p, const char *s)
{
	if (!p->err && ls_strbuf_puts(&p->body, s))
		p->err = -ENOMEM;
}

void lp_printf(struct ls_page *p, const char *fmt, ...)
{
	char small[512], *big = NULL;
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(small, sizeof(small), fmt, ap);
	va_end(ap);
	if (n < 0) {
		p->err = -EINVAL;
		return;
	}
	if ((size_t)n >= sizeof(small)) {
		va_start(ap, fmt);
		n = vasprintf(&big, fmt, ap);
		va_end(ap);
		if (n < 0) {
			p->err = -ENOMEM;
			return;
		}
	}
	lp_puts(p, big ? big : small);
	free(big);
}

void lp_text(struct ls_page *p, const char *s)
{
	for (; s && *s && !p->err; s++) {
		const char *e = *s == '<' ? "&lt;" : *s == '>' ? "&gt;" : *s == '&' ? "&amp;" : *s == '"' ? "&quot;" : NULL;
		if (e ? ls_strbuf_puts(&p->body, e) : ls_strbuf_append(&p->body, s, 1))
			p->err = -ENOMEM;
	}
}

const cJSON *lp_get(const cJSON *tree, const char *path)
{
	char key[128];
	while (tree && *path) {
		size_t len = strcspn(path, "/");
		if (len >= sizeof(key))
			return NULL;
		memcpy(key, path, len);
		key[len] = 0;
		tree = cJSON_GetObjectItemCaseSensitive(tree, key);
		path += len + (path[len] == '/');
	}
	return tree;
}

void lp_num(struct ls_page *p, const char *tag, const cJSON *tree, const char *path, int decimals)
{
	const cJSON *v = lp_get(tree, path);
	char *end = NULL;
	/* A raw number: written as Python writes a float ("request_rate": 20.0, peer_report.c). */
	double raw = cJSON_IsRaw(v) && v->valuestring ? strtod(v->valuestring, &end) : 0;
	lp_printf(p, "<%s class=\"n\" data-key=\"%s\">", tag, path);
	if (cJSON_IsNumber(v))
		lp_printf(p, "%.*f", decimals, v->valuedouble);
	else if (end && end != v->valuestring && !*end && isfinite(raw))
		lp_printf(p, "%.*f", decimals, raw);
	else
		lp_puts(p, "&mdash;");
	lp_printf(p, "</%s>", tag);
}

void lp_num_cell(struct ls_page *p, const cJSON *tree, const char *path, int decimals)
{
	lp_num(p, "td", tree, path, decimals);
}

cJSON *lp_round(double v, int decimals)
{
	double k = pow(10, decimals);
	return cJSON_CreateNumber(isfinite(v) ? round(v * k) / k : 0);
}

cJSON *lp_chart(struct ls_page *p, const char *kind, const char *title, const char *note)
{
	cJSON *c = cJSON_CreateObject();
	char id[32];
	if (!c || !cJSON_AddItemToArray(p->charts, c)) {
		cJSON_Delete(c);
		p->err = -ENOMEM;
		return NULL;
	}
	snprintf(id, sizeof(id), "chart%d", p->n_charts++);
	cJSON_AddStringToObject(c, "id", id);
	cJSON_AddStringToObject(c, "kind", kind);
	lp_printf(p, "<div class=\"box%s\"><h3>", strcmp(kind, "timeline") ? "" : " wide");
	lp_text(p, title);
	lp_printf(p, "</h3><div class=\"cv %s\"><canvas id=\"%s\"></canvas></div>", kind, id);
	if (note && *note) {
		lp_puts(p, "<p class=\"note\">");
		lp_text(p, note);
		lp_puts(p, "</p>");
	}
	lp_puts(p, "</div>\n");
	return c;
}

void lp_missing(struct ls_page *p, const char *title, const char *why)
{
	lp_puts(p, "<div class=\"box missing\"><h3>");
	lp_text(p, title);
	lp_puts(p, "</h3><p class=\"why\">Not drawn: ");
	lp_text(p, why);
	lp_puts(p, "</p></div>\n");
}

/* Where the CDF is read: every half percent, and finer in the tail. */
static size_t cdf_percents(double *q)
{
	size_t n = 0;
	for (int i = 0; i <= 198; i++)
		q[n++] = i * 0.5;
	for (int i = 0; i <= 10; i++)
		q[n++] = 99.0 + i * 0.1;
	return n;
}

cJSON *lp_cdf(const double *sorted, size_t n, double scale)
{
	double q[256];
	size_t nq = cdf_percents(q);
	cJSON *pts = cJSON_CreateArray();
	for (size_t i = 0; pts && n && i < nq; i++) {
		cJSON *pt = cJSON_CreateArray();
		if (!pt || !cJSON_AddItemToArray(pts, pt)) {
			cJSON_Delete(pt);
			break;
		}
		cJSON_AddItemToArray(pt, lp_round(ls_percentile(sorted, n, q[i]) * scale, 3));
		cJSON_AddItemToArray(pt, lp_round(q[i], 1));
	}
	return pts;
}

static const char page_css[] =
	"body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,'DejaVu Sans',sans-serif;margin:0;"
	"background:#f6f7f9;color:#1d2330}\n"
	"main{max-width:1240px;margin:0 auto;padding:18px 24px 40px}\n"
	"h1{font-size:22px;margin:6px 0 2px}h2{font-size:17px;margin:26px 0 8px;border-bottom:1px solid #d5d9e0;"
	"padding-bottom:4px}h3{font-size:13px;margin:0 0 6px;color:#394150}\n"
	".sub{color:#5a6272;margin:0 0 10px}.bad{color:#c0262d;font-weight:600}.good{color:#23804a}\n"
	"table{border-collapse:collapse;background:#fff;margin:6px 0 10px;font-size:13px}\n"
	"td,th{border:1px solid #dde1e7;padding:3px 8px;text-align:left;vertical-align:top}\n"
	"th{background:#eef1f5;font-weight:600}td.n{text-align:right;font-variant-numeric:tabular-nums}\n"
	"table.kv td:first-child{color:#5a6272;white-space:nowrap}\n"
	".grid{display:grid;grid-template-columns:1fr 1fr;gap:14px}\n"
	".box{background:#fff;border:1px solid #dde1e7;border-radius:6px;padding:10px 12px}\n"
	".box.wide{grid-column:1/-1}.cv{position:relative;height:240px}.cv.timeline{height:440px}\n"
	".cv.stack{height:150px}.note{color:#5a6272;font-size:12px;margin:6px 0 0}\n"
	".missing .why{color:#8a5a00;background:#fff6e0;padding:8px;border-radius:4px}\n"
	".reading{font-size:15px;margin:4px 0}.big{display:flex;gap:12px;flex-wrap:wrap;margin:10px 0}\n"
	".big div{background:#fff;border:1px solid #dde1e7;border-radius:6px;padding:8px 14px}\n"
	".big b{display:block;font-size:22px}.big span{color:#5a6272;font-size:12px}\n"
	"ul.checks{list-style:none;padding:0}ul.checks li{margin:3px 0}\n"
	"code,pre{font:12px ui-monospace,'DejaVu Sans Mono',monospace}pre{white-space:pre-wrap;background:#fff;"
	"border:1px solid #dde1e7;padding:8px}\n"
	"footer{color:#6b7280;font-size:12px;margin-top:30px}\n";

/* Draws every chart of the data, counts the ones drawn into data-rendered (and, once all are,
 * the canvases' places into data-rects, for the browser test), and notes any error. */
static const char page_js[] =
	"(function(){var B=document.body,drawn=0;\n"
	"window.addEventListener('error',function(e){B.dataset.error=String(e.message||e);});\n"
	"var D={charts:JSON.parse(document.getElementById('ls-data').textContent)};\n"
	"var COL={client:'#e45756',network:'#4c78a8',server:'#f58518',frontend:'#72b7b2',queue:'#b279a2',gpu:'#54a24b',"
	"prefill:'#9d755d',decode:'#8cd17d',"
	"'network+server':'#eeca3b',unattributed:'#9d9da0','slot wait':'#e45756',dispatch:'#ff9da6',"
	"'connect+TLS':'#4c78a8',send:'#72b7b2','to first frame':'#f58518',streaming:'#54a24b',failed:'#c0262d'};\n"
	"var PAL=['#4c78a8','#f58518','#54a24b','#e45756','#b279a2','#eeca3b','#72b7b2','#ff9da6','#9d755d'];\n"
	"Chart.defaults.animation=false;Chart.defaults.maintainAspectRatio=false;Chart.defaults.font.size=11;\n"
	"function col(n,i){return COL[n]||PAL[i%PAL.length];}\n"
	"function ax(t,o){o=o||{};o.title={display:!!t,text:t||''};return o;}\n"
	"function done(){var r=[];document.querySelectorAll('canvas').forEach(function(c){var b=c.getBoundingClientRect();"
	"r.push([Math.round(b.left+scrollX),Math.round(b.top+scrollY),Math.round(b.width),Math.round(b.height)]);});"
	"B.dataset.rects=JSON.stringify(r);B.dataset.height=document.documentElement.scrollHeight;}\n"
	"var mark={id:'lsmark',afterRender:function(c){if(c.$ls)return;c.$ls=1;drawn++;B.dataset.rendered=drawn;"
	"if(drawn==D.charts.length)done();}};\n"
	"var K={\n"
	"stack:function(s){return{type:'bar',data:{labels:s.labels,datasets:s.parts.map(function(p,i){return{label:p.name,"
	"data:p.values,backgroundColor:col(p.name,i)};})},options:{indexAxis:'y',scales:{x:ax(s.unit,{stacked:true}),"
	"y:{stacked:true}}}};},\n"
	"timeline:function(s){var ds=s.phases.map(function(n,k){return{label:n,data:s.rows.map(function(r){return[r[k],r[k+1]];}),"
	"backgroundColor:col(n,k),borderWidth:0,barPercentage:1,categoryPercentage:1};});"
	"ds.push({label:'failed',data:s.rows.map(function(r,i){return s.failed[i]?[r[4],r[6]]:null;}),backgroundColor:COL.failed,"
	"borderWidth:0,barPercentage:1,categoryPercentage:1});"
	"return{type:'bar',data:{labels:s.ids,datasets:ds},options:{indexAxis:'y',scales:{x:ax(s.xlabel,{type:'linear',min:0}),"
	"y:{stacked:true,grid:{display:false},ticks:{display:false},title:{display:true,text:s.ylabel}}}}};},\n"
	"lines:function(s){return{type:'line',data:{labels:s.x,datasets:s.series.map(function(e,i){return{label:e.name,data:e.values,"
	"borderColor:PAL[i],backgroundColor:PAL[i],pointRadius:0,stepped:'before',borderWidth:1.5};})},"
	"options:{scales:{x:ax(s.xlabel,{type:'linear'}),y:ax(s.ylabel,{beginAtZero:true})}}};},\n"
	"cdf:function(s){return{type:'scatter',data:{datasets:s.series.map(function(e,i){return{label:e.name,"
	"data:e.pts.map(function(p){return{x:p[0],y:p[1]};}),showLine:true,borderColor:PAL[i%PAL.length],"
	"backgroundColor:PAL[i%PAL.length],pointRadius:0,borderWidth:1.5};})},options:{scales:{x:ax(s.xlabel,"
	"{type:s.log?'logarithmic':'linear'}),y:ax('% of samples',{min:0,max:100})}}};},\n"
	"bars:function(s){return{type:'bar',data:{labels:s.labels,datasets:[{label:s.label,data:s.values,"
	"backgroundColor:s.color||PAL[0]}]},options:{scales:{x:ax(s.xlabel),y:ax(s.ylabel,{beginAtZero:true})},"
	"plugins:{legend:{display:false}}}};}\n"
	"};\n"
	"D.charts.forEach(function(s){var c=K[s.kind](s);c.plugins=[mark];new Chart(document.getElementById(s.id),c);});\n"
	"if(!D.charts.length)done();})();\n";

static const char *chartjs_path(void)
{
	const char *env = getenv("LATSCOPE_CHARTJS");
	return env && *env ? env : LS_CHARTJS_PATH;
}

/* Chart.js's text, malloc'd. NULL after a message naming the file and the package. */
static char *read_chartjs(size_t *len)
{
	const char *path = chartjs_path();
	FILE *f = fopen(path, "r");
	char *text = NULL;
	struct ls_strbuf b = { 0 };
	char buf[65536];
	size_t n;
	if (!f) {
		fprintf(stderr, "latscope: --html needs Chart.js at %s (Debian package libjs-chart.js: apt-get install "
				"libjs-chart.js, or make deps): %s\n", path, strerror(errno));
		return NULL;
	}
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		if (ls_strbuf_append(&b, buf, n))
			break;
	if (ferror(f) || n > 0 || !b.len) {
		fprintf(stderr, "latscope: --html: cannot read Chart.js from %s%s\n", path, b.len ? "" : " (empty)");
		ls_strbuf_free(&b);
	} else {
		text = b.data;
		*len = b.len;
	}
	fclose(f);
	return text;
}

int ls_html_check(const char *what, const char *path)
{
	size_t len;
	char *js = read_chartjs(&len);
	if (!js)
		return -ENOENT;
	free(js);
	return ls_outfile_check(what, path, 0);
}

/* The license comment Chart.js opens with ("Chart.js v3.9.1 ... MIT License"), one line. */
static void license_note(struct ls_page *p, const char *js)
{
	const char *a = strstr(js, "/*!"), *b = a ? strstr(a, "*/") : NULL;
	char note[512];
	size_t k = 0;
	for (const char *s = a ? a + 3 : NULL; s && s < b && k + 2 < sizeof(note); s++)
		if (*s != '*' && *s != '\n' && !(*s == ' ' && (!k || note[k - 1] == ' ')))
			note[k++] = *s;
	while (k && note[k - 1] == ' ')
		k--;
	note[k] = 0;
	lp_puts(p, "<footer>Charts drawn by ");
	lp_text(p, k ? note : "Chart.js (MIT License)");
	lp_printf(p, "; inlined from %s (Debian's libjs-chart.js) when this page was written. The page "
		     "loads nothing from the network.</footer>\n", chartjs_path());
}

/* The charts' data as script-safe JSON: "</" cannot end the script early. */
static char *data_json(const struct ls_page *p)
{
	char *j = cJSON_PrintUnformatted(p->charts);
	struct ls_strbuf b = { 0 };
	for (const char *s = j; s && *s; s++)
		if ((*s == '<' && s[1] == '/' ? ls_strbuf_puts(&b, "<\\") : ls_strbuf_append(&b, s, 1))) {
			ls_strbuf_free(&b);
			break;
		}
	free(j);
	return b.data;
}

int lp_write(struct ls_page *p, const char *path, const char *title)
{
	size_t js_len = 0;
	char *js = read_chartjs(&js_len), *data = NULL;
	if (!js)
		return -ENOENT;
	license_note(p, js);
	data = p->err ? NULL : data_json(p);
	if (!data) {
		fprintf(stderr, "latscope: out of memory building the HTML page %s\n", path);
		free(js);
		return -ENOMEM;
	}
	struct ls_outfile f;
	int err = ls_outfile_open(&f, "--html", path);
	if (!err) {
		fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>", f.f);
		fputs(title, f.f); /* the callers' titles are escaped already */
		fprintf(f.f, "</title>\n<style>\n%s</style>\n</head>\n<body data-charts=\"%d\" data-rendered=\"0\">\n<main>\n",
			page_css, p->n_charts);
		fwrite(p->body.data ? p->body.data : "", 1, p->body.len, f.f);
		fputs("</main>\n<script>\n", f.f);
		fwrite(js, 1, js_len, f.f);
		fprintf(f.f, "\n</script>\n<script type=\"application/json\" id=\"ls-data\">%s</script>\n<script>\n%s</script>\n"
			     "</body></html>\n", data, page_js);
		err = ls_outfile_commit(&f);
	}
	free(js);
	free(data);
	return err;
}

/* Shell-safe characters: a word made only of these is printed bare. */
static int plain_word(const char *s)
{
	return *s && strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_=.,:/+@%") == strlen(s);
}

char *ls_html_command_line(const char *prog, int argc, char **argv)
{
	struct ls_strbuf b = { 0 };
	int err = ls_strbuf_puts(&b, prog);
	for (int i = 0; !err && i < argc; i++) {
		err = ls_strbuf_puts(&b, " ");
		if (plain_word(argv[i])) {
			err = err ? err : ls_strbuf_puts(&b, argv[i]);
			continue;
		}
		err = err ? err : ls_strbuf_puts(&b, "'");
		for (const char *s = argv[i]; !err && *s; s++)
			err = *s == '\'' ? ls_strbuf_puts(&b, "'\\''") : ls_strbuf_append(&b, s, 1);
		err = err ? err : ls_strbuf_puts(&b, "'");
	}
	if (err) {
		ls_strbuf_free(&b);
		return NULL;
	}
	return b.data;
}
