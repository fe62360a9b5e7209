/* replay_main.c — the corpus replay: a main() for the fuzz targets without libFuzzer, built with
 * gcc ASan+UBSan (make SAN=1 san-bins) and run by tests/run. Feeds every file named on the
 * command line, or found in a directory named there, to LLVMFuzzerTestOneInput once; prints how
 * many. A sanitizer report or an abort fails it, and so does an input it cannot read or a corpus
 * with no input at all (an empty replay would pass having tested nothing). */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The whole file in an exact-size buffer (*len bytes, never NULL), or NULL with a message. */
static uint8_t *read_input(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		fprintf(stderr, "replay: cannot open %s: %s\n", path, strerror(errno));
		return NULL;
	}
	size_t cap = 4096, n = 0, r;
	uint8_t *buf = malloc(cap);
	while (buf && (r = fread(buf + n, 1, cap - n, f)) > 0) {
		n += r;
		if (n == cap) {
			uint8_t *grown = realloc(buf, cap * 2);
			if (!grown) {
				free(buf);
				buf = NULL;
				break;
			}
			buf = grown;
			cap *= 2;
		}
	}
	int read_failed = ferror(f);
	fclose(f);
	if (!buf || read_failed) {
		fprintf(stderr, "replay: %s: %s\n", path, buf ? "read error" : "out of memory");
		free(buf);
		return NULL;
	}
	/* An exact-size copy, as libFuzzer gives it: a read past the end is caught. */
	uint8_t *exact = malloc(n ? n : 1);
	if (!exact)
		fprintf(stderr, "replay: %s: out of memory\n", path);
	else
		memcpy(exact, buf, n);
	free(buf);
	*len = n;
	return exact;
}

static int run_file(const char *path)
{
	size_t len;
	uint8_t *data = read_input(path, &len);
	if (!data)
		return -1;
	LLVMFuzzerTestOneInput(data, len);
	free(data);
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void free_names(char **names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

/* The entries of dir but dot files, sorted (a reproducible order) into *out (NULL when there are
 * none). Returns 0, or -1 with a message. */
static int list_dir(const char *dir, char ***out, size_t *count)
{
	DIR *d = opendir(dir);
	if (!d) {
		fprintf(stderr, "replay: cannot open %s: %s\n", dir, strerror(errno));
		return -1;
	}
	char **names = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		if (n == cap) {
			size_t grown_cap = cap ? cap * 2 : 64;
			char **grown = realloc(names, grown_cap * sizeof(*names));
			if (!grown)
				goto oom;
			names = grown;
			cap = grown_cap;
		}
		if (!(names[n] = strdup(de->d_name)))
			goto oom;
		n++;
	}
	closedir(d);
	if (n)
		qsort(names, n, sizeof(*names), cmp_str);
	*out = names;
	*count = n;
	return 0;
oom:
	closedir(d);
	free_names(names, n);
	fprintf(stderr, "replay: %s: out of memory listing it\n", dir);
	return -1;
}

/* Runs every regular file in dir. Returns the number run, or -1 when one could not be. */
static long run_dir(const char *dir)
{
	char **names;
	size_t n;
	if (list_dir(dir, &names, &n))
		return -1;
	long ran = 0;
	for (size_t i = 0; i < n && ran >= 0; i++) {
		char path[4096];
		struct stat st;
		if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, names[i]) >= sizeof(path)) {
			fprintf(stderr, "replay: %s/%s: path too long\n", dir, names[i]);
			ran = -1;
		} else if (stat(path, &st)) {
			fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
			ran = -1;
		} else if (S_ISREG(st.st_mode)) {
			ran = run_file(path) == 0 ? ran + 1 : -1;
		}
	}
	free_names(names, n);
	return ran;
}

int main(int argc, char **argv)
{
	long total = 0;
	if (argc < 2) {
		fprintf(stderr, "usage: %s CORPUS_DIR|FILE...\n", argv[0]);
		return 2;
	}
	for (int i = 1; i < argc; i++) {
		struct stat st;
		if (stat(argv[i], &st)) {
			fprintf(stderr, "replay: %s: %s\n", argv[i], strerror(errno));
			return 1;
		}
		long n = S_ISDIR(st.st_mode) ? run_dir(argv[i]) : run_file(argv[i]) == 0 ? 1 : -1;
		if (n < 0)
			return 1;
		if (n == 0) {
			fprintf(stderr, "replay: %s: no input in it (an empty corpus tests nothing)\n", argv[i]);
			return 1;
		}
		total += n;
	}
	printf("replayed %ld inputs\n", total);
	return 0;
}
