// One photo is sent by one sender at a time. The page (any open tab) and the service worker
// (sw.js, sending with the page closed) each run the same queue (queue-scheduler.js); this
// wraps its `send` so that a photo goes only while its sender holds the photo's lock (Web Locks,
// shared by every tab and worker of the origin). A photo whose lock another sender holds waits
// a few seconds and is looked at again; by then the other sender may have sent it, which the
// queue's own records say (IndexedDB): the next try asks the server first (the preflight, or the
// resumable upload's own creation) instead of sending the bytes again. Where there are no Web
// Locks (not a secure context) there is no service worker either: the queue is sent as before.

// How long a photo another sender is sending waits before it is looked at again.
const BUSY_RETRY_MS = 5000;

/** The lock of one photo: its key. */
export function lockName(key) {
  return `confetti.upload.${key}`;
}

/** `Queue` (queue-scheduler.js `UploadQueue` or a subclass), sending each photo under its lock. */
export function withItemLocks(Queue) {
  return class LockedQueue extends Queue {
    send(item) {
      const locks = globalThis.navigator?.locks;
      if (!locks) return super.send(item);
      // The slot is taken now (the scheduler counts `active` as it hands out slots), and the
      // item is not handed out twice while the lock is asked for.
      this.reserve();
      item.state = 'uploading';
      return locks
        .request(lockName(item.client_upload_id), { ifAvailable: true }, async (lock) => {
          if (!lock) {
            this.unreserve();
            item.state = 'queued';
            item.next_at = Date.now() + BUSY_RETRY_MS;
            this.onChange(item);
            this.pump();
            return;
          }
          await this.catchUp(item).catch((e) => console.warn('could not read a queue item back', e));
          this.unreserve();
          await super.send(item);
        })
        .catch((e) => {
          console.error('could not take an upload lock', e);
          this.unreserve();
          return super.send(item);
        });
    }

    // A slot held while a lock is asked for, kept in `active` and in the sending time as the
    // scheduler's own `send` keeps them (the measured rate counts from the first slot taken).
    reserve() {
      if (this.active === 0) this.sendingSince = Date.now();
      this.active += 1;
    }

    unreserve() {
      this.active -= 1;
      if (this.active === 0 && this.sendingSince !== null) {
        this.sendingMs += Date.now() - this.sendingSince;
        this.sendingSince = null;
      }
    }

    /**
     * What another sender did with the item meanwhile, as IndexedDB keeps it: its tries and its
     * resumable upload. Gone from the queue: another sender finished it (or the guest removed it),
     * so this try asks the server before sending anything.
     */
    async catchUp(item) {
      if (!this.store) return;
      const kept = await this.store.get(item.client_upload_id);
      if (!kept) {
        item.attempts = Math.max(item.attempts || 0, 1);
        return;
      }
      if ((kept.attempts || 0) > (item.attempts || 0)) {
        item.attempts = kept.attempts;
        item.location = kept.location ?? null;
        item.offset = kept.offset ?? 0;
      }
    }
  };
}
