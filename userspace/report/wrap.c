/* wrap.c — see wrap.h. */
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include "report/wrap.h"

int ls_wrap_width(FILE *out)
{
	const char *env = getenv("LATSCOPE_WRAP");
	if (env && *env) {
		long n = strtol(env, NULL, 10);
		return n >= 40 && n <= 10000 ? (int)n : 0;
	}
	struct winsize ws;
	int fd = fileno(out);
	if (fd < 0 || !isatty(fd))
		return 0;
	/* A pty that has no window size is no one's screen: mpirun forwards its ranks' output
	 * through one, to whatever mpirun's own stdout is (a file, a pipe). */
	if (ioctl(fd, TIOCGWINSZ, &ws) || !ws.ws_col)
		return 0;
	if (ws.ws_col < 40)
		return LS_WRAP_MAX;
	return ws.ws_col < LS_WRAP_MAX ? ws.ws_col : LS_WRAP_MAX;
}

/* Where a folded line goes on: its value column (after "label" and two or more spaces, in the
 * first 48 columns), else its own indent plus 4. */
static size_t value_column(const char *line, size_t len)
{
	size_t i = 0;
	while (i < len && line[i] == ' ')
		i++;
	size_t indent = i;
	for (; i + 2 < len && i < 48; i++)
		if (line[i] != ' ' && line[i + 1] == ' ' && line[i + 2] == ' ') {
			size_t v = i + 1;
			while (v < len && line[v] == ' ')
				v++;
			return v < 48 ? v : indent + 4;
		}
	return indent + 4;
}

/* One line (no newline), folded. */
static void fold_line(FILE *out, const char *line, size_t len, size_t width)
{
	size_t col0 = value_column(line, len), indent = 0;
	while (indent + len > width) {
		size_t room = width - indent, cut = room;
		while (cut > col0 / 2 && line[cut] != ' ')
			cut--;
		if (line[cut] != ' ')
			break; /* one word longer than the line: leave it whole */
		fprintf(out, "%*s%.*s\n", (int)indent, "", (int)cut, line);
		while (cut < len && line[cut] == ' ')
			cut++;
		line += cut;
		len -= cut;
		indent = col0 < width / 2 ? col0 : 4;
	}
	fprintf(out, "%*s%.*s\n", (int)indent, "", (int)len, line);
}

void ls_wrap_text(FILE *out, const char *text, size_t len, int width)
{
	while (len) {
		const char *nl = memchr(text, '\n', len);
		size_t n = nl ? (size_t)(nl - text) : len;
		if (width > 0 && n > (size_t)width)
			fold_line(out, text, n, (size_t)width);
		else if (nl)
			fprintf(out, "%.*s\n", (int)n, text);
		else
			fprintf(out, "%.*s", (int)n, text);
		text += n + (nl != NULL);
		len -= n + (nl != NULL);
	}
}

FILE *ls_wrap_open(struct ls_wrap *w, FILE *out)
{
	*w = (struct ls_wrap){ .out = out, .f = out, .width = ls_wrap_width(out) };
	if (w->width) {
		fflush(out);
		FILE *mem = open_memstream(&w->buf, &w->len);
		if (mem)
			w->f = mem;
	}
	return w->f;
}

void ls_wrap_close(struct ls_wrap *w)
{
	if (w->f != w->out) {
		fclose(w->f);
		ls_wrap_text(w->out, w->buf, w->len, w->width);
		free(w->buf);
	}
	fflush(w->out);
	*w = (struct ls_wrap){ 0 };
}
