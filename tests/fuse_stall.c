/*
 * fuse_stall MOUNTPOINT - a filesystem whose writes never return, for
 * test_listener: a regular file that stalls whoever writes it, as any user
 * can make where FUSE is available.  The root directory takes up to 16
 * files (create, rename, unlink, stat, open work at once); a write to any
 * of them waits until this process is killed, which aborts the connection
 * (the writer then gets ENOTCONN) and leaves the mount to be detached.
 *
 * Runs in the foreground, one thread; prints "ready" on standard output
 * once the mount is up (the kernel's first request), and "write" as a
 * write comes in.
 */
#define FUSE_USE_VERSION 31
#define _GNU_SOURCE
#include <errno.h>
#include <fuse.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define FILES 16

static char names[FILES][256];

static int find(const char *path)
{
	for (int i = 0; i < FILES; i++)
		if (names[i][0] && !strcmp(names[i], path + 1))
			return i;
	return -1;
}

static int st_getattr(const char *path, struct stat *sb, struct fuse_file_info *fi)
{
	(void)fi;
	memset(sb, 0, sizeof(*sb));
	sb->st_uid = getuid();
	sb->st_gid = getgid();
	if (!strcmp(path, "/")) {
		sb->st_mode = S_IFDIR | 0700;
		sb->st_nlink = 2;
		return 0;
	}
	int i = find(path);
	if (i < 0)
		return -ENOENT;
	sb->st_mode = S_IFREG | 0600;
	sb->st_nlink = 1;
	sb->st_ino = (ino_t)i + 2;
	return 0;
}

static int st_readdir(const char *path, void *buf, fuse_fill_dir_t fill, off_t off,
		      struct fuse_file_info *fi, enum fuse_readdir_flags flags)
{
	(void)path;
	(void)off;
	(void)fi;
	(void)flags;
	fill(buf, ".", NULL, 0, 0);
	fill(buf, "..", NULL, 0, 0);
	for (int i = 0; i < FILES; i++)
		if (names[i][0])
			fill(buf, names[i], NULL, 0, 0);
	return 0;
}

static int st_create(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	(void)mode;
	(void)fi;
	if (find(path) >= 0)
		return -EEXIST;
	if (strchr(path + 1, '/') || strlen(path + 1) >= sizeof(names[0]))
		return -EINVAL;
	for (int i = 0; i < FILES; i++)
		if (!names[i][0]) {
			snprintf(names[i], sizeof(names[i]), "%s", path + 1);
			return 0;
		}
	return -ENOSPC;
}

static int st_open(const char *path, struct fuse_file_info *fi)
{
	(void)fi;
	return find(path) < 0 ? -ENOENT : 0;
}

static int st_unlink(const char *path)
{
	int i = find(path);
	if (i < 0)
		return -ENOENT;
	names[i][0] = 0;
	return 0;
}

static int st_rename(const char *from, const char *to, unsigned flags)
{
	(void)flags;
	int i = find(from), j = find(to);
	if (i < 0)
		return -ENOENT;
	if (j >= 0 && j != i)
		names[j][0] = 0;
	snprintf(names[i], sizeof(names[i]), "%s", to + 1);
	return 0;
}

static int st_truncate(const char *path, off_t len, struct fuse_file_info *fi)
{
	(void)len;
	(void)fi;
	return find(path) < 0 ? -ENOENT : 0;
}

/* The point of it: the writer waits for good. */
static int st_write(const char *path, const char *buf, size_t len, off_t off,
		    struct fuse_file_info *fi)
{
	(void)path;
	(void)buf;
	(void)len;
	(void)off;
	(void)fi;
	printf("write\n");
	fflush(stdout);
	for (;;)
		pause();
	return -EIO;
}


static void *st_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
	(void)conn;
	/* No cache: every write goes to st_write. */
	cfg->direct_io = 1;
	cfg->attr_timeout = 0;
	cfg->entry_timeout = 0;
	cfg->negative_timeout = 0;
	printf("ready\n");
	fflush(stdout);
	return NULL;
}

static const struct fuse_operations ops = {
	.getattr = st_getattr,
	.readdir = st_readdir,
	.create = st_create,
	.open = st_open,
	.unlink = st_unlink,
	.rename = st_rename,
	.truncate = st_truncate,
	.write = st_write,
	.init = st_init,
};

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: fuse_stall MOUNTPOINT\n");
		return 2;
	}
	char *args[] = { argv[0], "-f", "-s", "-o", "default_permissions", argv[1], NULL };
	return fuse_main(6, args, &ops, NULL);
}
