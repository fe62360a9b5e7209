/* outfile.c — see outfile.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "base/outfile.h"

/* mkdir -p of the directory part of path. 0 or -errno. */
static int make_parents(const char *path)
{
	char *dir = strdup(path);
	if (!dir)
		return -ENOMEM;
	int rc = 0;
	char *slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = 0;
		for (char *p = dir + 1; !rc; p++) {
			char c = *p;
			if (c != '/' && c)
				continue;
			*p = 0;
			if (mkdir(dir, 0777) && errno != EEXIST)
				rc = -errno;
			*p = c;
			if (!c)
				break;
		}
	}
	free(dir);
	return rc;
}

/* 1 when path exists and is not a regular file: written in place, never renamed over. */
static int special_target(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && !S_ISREG(st.st_mode);
}

static char *tmp_name(const char *path)
{
	char *tmp = NULL;
	if (asprintf(&tmp, "%s.tmp.%d", path, (int)getpid()) < 0)
		return NULL;
	return tmp;
}

int ls_outfile_check(const char *what, const char *path, int make_dirs)
{
	int rc = make_dirs ? make_parents(path) : 0;
	if (!rc && !special_target(path)) {
		char *probe = tmp_name(path);
		int fd = probe ? open(probe, O_WRONLY | O_CREAT | O_EXCL, 0644) : -1;
		rc = probe ? (fd < 0 ? -errno : 0) : -ENOMEM;
		if (fd >= 0) {
			close(fd);
			unlink(probe);
		}
		free(probe);
	}
	if (rc)
		fprintf(stderr, "latscope: %s %s: cannot write there: %s\n", what, path, strerror(-rc));
	return rc;
}

int ls_outfile_open(struct ls_outfile *o, const char *what, const char *path)
{
	*o = (struct ls_outfile){ .what = what };
	int rc = 0;
	if (!(o->path = strdup(path)))
		rc = -ENOMEM;
	if (!rc && !special_target(path) && !(o->tmp = tmp_name(path)))
		rc = -ENOMEM;
	if (!rc && !(o->f = fopen(o->tmp ? o->tmp : path, "w")))
		rc = -errno;
	if (rc) {
		fprintf(stderr, "latscope: %s %s: %s\n", what, path, strerror(-rc));
		ls_outfile_abort(o);
	}
	return rc;
}

int ls_outfile_commit(struct ls_outfile *o)
{
	int rc = 0;
	if (fflush(o->f) || ferror(o->f))
		rc = -(errno ? errno : EIO);
	if (fclose(o->f) && !rc)
		rc = -errno;
	o->f = NULL;
	if (!rc && o->tmp && rename(o->tmp, o->path))
		rc = -errno;
	if (rc)
		fprintf(stderr, "latscope: %s %s: write failed: %s (the file was not written)\n", o->what,
			o->path, strerror(-rc));
	ls_outfile_abort(o);
	return rc;
}

void ls_outfile_abort(struct ls_outfile *o)
{
	if (o->f)
		fclose(o->f);
	if (o->tmp)
		unlink(o->tmp); /* gone already after a rename */
	free(o->tmp);
	free(o->path);
	*o = (struct ls_outfile){ 0 };
}
