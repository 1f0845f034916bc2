#define _GNU_SOURCE
#include "clinux_watch.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/fanotify.h>
#include <sys/inotify.h>

const uint64_t clinux_FAN_CREATE = FAN_CREATE;
const uint64_t clinux_FAN_DELETE = FAN_DELETE;
const uint64_t clinux_FAN_RENAME = FAN_RENAME;
const uint64_t clinux_FAN_MOVED_FROM = FAN_MOVED_FROM;
const uint64_t clinux_FAN_MOVED_TO = FAN_MOVED_TO;
const uint64_t clinux_FAN_MODIFY = FAN_MODIFY;
const uint64_t clinux_FAN_CLOSE_WRITE = FAN_CLOSE_WRITE;
const uint64_t clinux_FAN_ATTRIB = FAN_ATTRIB;
const uint64_t clinux_FAN_ONDIR = FAN_ONDIR;
const uint64_t clinux_FAN_Q_OVERFLOW = FAN_Q_OVERFLOW;

int clinux_fanotify_init(void) {
    return fanotify_init(FAN_CLASS_NOTIF | FAN_CLOEXEC | FAN_NONBLOCK | FAN_REPORT_DFID_NAME, O_RDONLY | O_LARGEFILE);
}

int clinux_fanotify_mark_filesystem(int fd, uint64_t mask, int dirfd) {
    return fanotify_mark(fd, FAN_MARK_ADD | FAN_MARK_FILESYSTEM, mask, dirfd, NULL);
}

/// Fills handle and name from a DFID_NAME-shaped record.
static void read_fid_record(const struct fanotify_event_info_fid *fid, const unsigned char *end,
                            int32_t *type, uint32_t *bytes, const unsigned char **handle, const char **name) {
    const struct file_handle *fh = (const struct file_handle *)fid->handle;
    const unsigned char *after = fid->handle + sizeof(struct file_handle) + fh->handle_bytes;
    if (after > end) return;
    *type = fh->handle_type;
    *bytes = fh->handle_bytes;
    *handle = fh->f_handle;
    *name = (const char *)after;
    // A record without a name (FAN_EVENT_INFO_TYPE_DFID) ends at the handle.
    if (fid->hdr.info_type == FAN_EVENT_INFO_TYPE_DFID || after >= end) *name = "";
}

long clinux_fanotify_next(const unsigned char *buffer, long length, long offset, struct clinux_fan_event *out) {
    if (offset < 0 || offset + (long)sizeof(struct fanotify_event_metadata) > length) return -1;
    const struct fanotify_event_metadata *event = (const struct fanotify_event_metadata *)(buffer + offset);
    if (event->event_len < sizeof(*event) || offset + (long)event->event_len > length) return -1;
    memset(out, 0, sizeof(*out));
    out->mask = event->mask;
    out->pid = event->pid;
    out->name = "";
    out->new_name = "";
    const unsigned char *end = buffer + offset + event->event_len;
    const unsigned char *info = buffer + offset + event->metadata_len;
    while (info + sizeof(struct fanotify_event_info_header) <= end) {
        const struct fanotify_event_info_header *header = (const struct fanotify_event_info_header *)info;
        if (header->len < sizeof(*header) || info + header->len > end) break;
        const struct fanotify_event_info_fid *fid = (const struct fanotify_event_info_fid *)info;
        const unsigned char *record_end = info + header->len;
        switch (header->info_type) {
        case FAN_EVENT_INFO_TYPE_DFID_NAME:
        case FAN_EVENT_INFO_TYPE_DFID:
        case FAN_EVENT_INFO_TYPE_OLD_DFID_NAME:
            read_fid_record(fid, record_end, &out->handle_type, &out->handle_bytes, &out->handle, &out->name);
            break;
        case FAN_EVENT_INFO_TYPE_NEW_DFID_NAME:
            read_fid_record(fid, record_end, &out->new_handle_type, &out->new_handle_bytes, &out->new_handle, &out->new_name);
            break;
        default:
            break;
        }
        info += header->len;
    }
    return offset + (long)event->event_len;
}

const uint32_t clinux_IN_CREATE = IN_CREATE;
const uint32_t clinux_IN_DELETE = IN_DELETE;
const uint32_t clinux_IN_MOVED_FROM = IN_MOVED_FROM;
const uint32_t clinux_IN_MOVED_TO = IN_MOVED_TO;
const uint32_t clinux_IN_MODIFY = IN_MODIFY;
const uint32_t clinux_IN_CLOSE_WRITE = IN_CLOSE_WRITE;
const uint32_t clinux_IN_ATTRIB = IN_ATTRIB;
const uint32_t clinux_IN_ONLYDIR = IN_ONLYDIR;
const uint32_t clinux_IN_DONT_FOLLOW = IN_DONT_FOLLOW;
const uint32_t clinux_IN_EXCL_UNLINK = IN_EXCL_UNLINK;
const uint32_t clinux_IN_Q_OVERFLOW = IN_Q_OVERFLOW;
const uint32_t clinux_IN_IGNORED = IN_IGNORED;

int clinux_inotify_init(void) { return inotify_init1(IN_CLOEXEC | IN_NONBLOCK); }

int clinux_inotify_watch(int fd, int dirfd, uint32_t mask) {
    char path[64];
    snprintf(path, sizeof(path), "/proc/self/fd/%d", dirfd);
    return inotify_add_watch(fd, path, mask);
}

int clinux_inotify_unwatch(int fd, int wd) { return inotify_rm_watch(fd, wd); }

long clinux_inotify_next(const unsigned char *buffer, long length, long offset, struct clinux_in_event *out) {
    if (offset < 0 || offset + (long)sizeof(struct inotify_event) > length) return -1;
    const struct inotify_event *event = (const struct inotify_event *)(buffer + offset);
    long next = offset + (long)sizeof(struct inotify_event) + (long)event->len;
    if (next > length) return -1;
    out->wd = event->wd;
    out->mask = event->mask;
    out->cookie = event->cookie;
    out->name = event->len > 0 ? event->name : "";
    return next;
}
