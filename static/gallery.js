// The gallery: a grid of thumbnails, newest first — by the time each was taken, or by upload as
// the viewer chooses (remembered on the device) — that loads the next page (keyset cursor) as one scrolls, and follows the live stream of new and removed photos; a tile opens the
// lightbox (lightbox.js). Every user-provided string is set as text, never as HTML.
// A tile shows the thumbnail only: while the server still makes it, the guest's own photo is
// drawn from the copy in this page's upload queue, anyone else's as a calm placeholder; the
// thumbnail takes its place when the live stream (or a re-read) says it exists.

import { h, api, ApiError, thumbUrl, isVideo, durationText, capturedAt, remembered, remember, STATUS, REVIEW } from './util.js';
import { withPlaceholder } from './placeholder.js';
import { t, onLangChange } from './i18n.js';
import { Lightbox } from './lightbox.js';

const PAGE = 30;

/** The gallery's orders, as the listing's `order` names them. */
export const ORDER = Object.freeze({ TAKEN: 'taken', UPLOADED: 'uploaded' });
const ORDER_KEY = 'confetti.galleryOrder';

/**
 * Newest first in `order`, as the server lists: by capture time, then by upload. Ids are
 * time-ordered UUIDs; created_at breaks ties with other id schemes.
 */
function newer(a, b, order) {
  if (order === ORDER.TAKEN && capturedAt(a) !== capturedAt(b)) return capturedAt(a) > capturedAt(b);
  if (a.created_at !== b.created_at) return a.created_at > b.created_at;
  return a.id > b.id;
}

export class Gallery {
  /**
   * @param {object} o
   * @param {string} o.slug
   * @param {HTMLElement} o.root where the grid goes
   * @param {() => ({guestId?: string, organiser?: boolean, downloads?: boolean})} o.viewer who is
   *   looking (`downloads` false: a guest may not save other guests' originals)
   * @param {(upload) => void} [o.onDeleted]
   * @param {import('./messages.js').MessageArea} o.messages the page's, for what outlives the lightbox
   * @param {(upload) => (Blob | null)} [o.localBlob] the photo's bytes still held by this page's
   *   upload queue, drawn while the server has no thumbnail of it yet
   * @param {(upload) => HTMLElement[]} [o.extraActions] more controls for the lightbox (the
   *   organiser's Block and Set as cover)
   */
  constructor({ slug, root, viewer, onDeleted, messages, localBlob, extraActions }) {
    this.slug = slug;
    this.extraActions = extraActions || (() => []);
    // The organiser's selection (selection.js), while it exists: a tap selects instead of opening.
    this.selection = null;
    this.localBlob = localBlob || (() => null);
    // Object URLs of queued photos shown in place of a thumbnail not made yet, by upload id.
    this.localUrls = new Map();
    this.messages = messages;
    this.viewer = viewer;
    this.onDeleted = onDeleted || (() => {});
    this.uploads = new Map();
    this.order = [];
    this.cursor = null;
    this.exhausted = false;
    this.loading = null;
    this.filterMine = false;
    this.listeners = new Set();

    this.sort = remembered(ORDER_KEY) === ORDER.UPLOADED ? ORDER.UPLOADED : ORDER.TAKEN;
    this.sortSelect = h('select', { name: 'gallery_order', 'data-testid': 'gallery-order', onchange: () => this.setSort(this.sortSelect.value) },
      h('option', { value: ORDER.TAKEN }), h('option', { value: ORDER.UPLOADED }));
    this.sortSelect.value = this.sort;
    this.sortLabel = h('span', {});
    this.sortControl = h('label', { class: 'gallery-order' }, this.sortLabel, this.sortSelect);
    this.grid = h('ul', { class: 'grid', 'data-testid': 'gallery', 'data-order': this.sort });
    this.empty = h('p', { class: 'empty' });
    this.more = h('button', { type: 'button', class: 'more secondary', onclick: () => this.loadMore() });
    this.sentinel = h('div', { class: 'sentinel', 'aria-hidden': 'true' });
    root.append(this.sortControl, this.grid, this.empty, this.more, this.sentinel);
    this.lightbox = new Lightbox(this);

    if ('IntersectionObserver' in window) {
      this.observer = new IntersectionObserver((entries) => {
        if (entries.some((e) => e.isIntersecting)) this.loadMore();
      }, { rootMargin: '600px 0px' });
      this.observer.observe(this.sentinel);
    }
    this.renderSortWords();
    onLangChange(() => {
      this.renderSortWords();
      this.renderAll();
    });
  }

  renderSortWords() {
    this.sortLabel.textContent = t('order_label');
    this.sortSelect.options[0].textContent = t('order_taken');
    this.sortSelect.options[1].textContent = t('order_uploaded');
  }

  /** Lists by capture time or by upload from now on, on this device too, read afresh from the first page. */
  setSort(order) {
    if (order !== ORDER.TAKEN && order !== ORDER.UPLOADED) return;
    remember(ORDER_KEY, order);
    this.sortSelect.value = order;
    if (order === this.sort) return;
    this.sort = order;
    this.grid.dataset.order = order;
    this.reload();
  }

  onChange(fn) {
    this.listeners.add(fn);
  }

  emit() {
    for (const fn of this.listeners) fn(this);
  }

  /** Loads the next page; resolves when it is shown. Several calls share one request. */
  loadMore() {
    if (this.exhausted) return Promise.resolve();
    if (this.loading) return this.loading;
    const sort = this.sort;
    const params = new URLSearchParams({ limit: String(PAGE), order: sort });
    if (this.cursor) params.set('cursor', this.cursor);
    this.loading = api('GET', `/api/v1/events/${encodeURIComponent(this.slug)}/uploads?${params}`)
      .then((page) => {
        // Switched to the other order meanwhile: this page and its cursor belong to the old one.
        if (sort !== this.sort) return;
        for (const u of page.items) this.upsert(u, { append: true });
        this.cursor = page.next_cursor;
        this.exhausted = !page.next_cursor;
      })
      .catch((e) => console.warn('could not load the gallery', e))
      .finally(() => {
        this.loading = null;
        this.renderFooter();
        this.emit();
        // A short first page on a tall screen leaves the sentinel in view: keep going.
        if (!this.exhausted && this.sentinelVisible()) setTimeout(() => this.loadMore(), 0);
      });
    this.renderFooter();
    return this.loading;
  }

  /** Reads the gallery afresh from its first page (what the viewer may see has changed). */
  reload() {
    // A page still loading belongs to the old view: wait for it, then start over.
    return (this.loading || Promise.resolve()).then(() => {
      for (const id of this.order) this.forgetLocal(id);
      this.uploads.clear();
      this.order = [];
      this.grid.replaceChildren();
      this.cursor = null;
      this.exhausted = false;
      return this.loadMore();
    });
  }

  sentinelVisible() {
    const r = this.sentinel.getBoundingClientRect();
    return r.top < window.innerHeight + 600 && this.sentinel.offsetParent !== null;
  }

  /** Adds or refreshes one upload and its tile, keeping newest first in the gallery's order. */
  upsert(u, { append = false } = {}) {
    const known = this.uploads.has(u.id);
    this.uploads.set(u.id, u);
    if (!known) {
      let index = this.order.length;
      if (!append || (this.order.length && newer(u, this.uploads.get(this.order[this.order.length - 1]), this.sort))) {
        index = this.order.findIndex((id) => newer(u, this.uploads.get(id), this.sort));
        if (index < 0) index = this.order.length;
      }
      this.order.splice(index, 0, u.id);
      const tile = this.tile(u);
      const before = this.order[index + 1] ? this.grid.querySelector(`[data-upload-id="${this.order[index + 1]}"]`) : null;
      this.grid.insertBefore(tile, before);
    } else {
      const old = this.grid.querySelector(`[data-upload-id="${u.id}"]`);
      if (old) old.replaceWith(this.tile(u));
    }
    if (u.status === STATUS.PROCESSING || !picturesSettled(u)) this.watch(u.id);
    this.renderFooter();
    if (this.lightbox.current === u.id) this.lightbox.refresh(u);
    // The server's own pictures are shown now: the local copy is no longer needed.
    if (u.urls?.thumb && u.urls?.preview) this.forgetLocal(u.id);
    if (!append) this.emit();
  }

  remove(id) {
    if (!this.uploads.delete(id)) return;
    this.order = this.order.filter((x) => x !== id);
    this.grid.querySelector(`[data-upload-id="${id}"]`)?.remove();
    if (this.lightbox.current === id) this.lightbox.close();
    this.selection?.forget(id);
    this.forgetLocal(id);
    this.renderFooter();
    this.emit();
  }

  /**
   * Hidden or deleted: the organiser and its uploader still see a hidden photo (marked so),
   * everyone else no longer sees it at all.
   */
  async reread(id) {
    try {
      this.upsert(await api('GET', `/api/v1/uploads/${id}`));
    } catch (e) {
      if (e instanceof ApiError && e.status === 404) this.remove(id);
    }
  }

  /** Re-reads an upload whose thumbnail is still being made, a few times with growing pauses. */
  watch(id, attempt = 0) {
    this.watching ??= new Set();
    if (attempt === 0) {
      if (this.watching.has(id)) return;
      this.watching.add(id);
    }
    if (attempt >= 8) {
      this.watching.delete(id);
      return;
    }
    setTimeout(async () => {
      if (!this.uploads.has(id)) return this.watching.delete(id);
      try {
        const u = await api('GET', `/api/v1/uploads/${id}`);
        if (picturesSettled(u)) {
          this.watching.delete(id);
          this.upsert(u);
        } else this.watch(id, attempt + 1);
      } catch (e) {
        if (e instanceof ApiError && e.status === 404) {
          this.watching.delete(id);
          this.remove(id);
        } else this.watch(id, attempt + 1);
      }
    }, 1000 * 2 ** Math.min(attempt, 4));
  }

  isMine(u) {
    const v = this.viewer();
    return Boolean(v.guestId && u.guest?.id === v.guestId);
  }

  setFilterMine(mine) {
    this.filterMine = mine;
    this.grid.classList.toggle('only-mine', mine);
    this.renderFooter();
    // Own photos may be further down than the first page.
    if (mine && !this.exhausted) this.loadMore();
  }

  visibleCount() {
    return this.filterMine ? this.order.filter((id) => this.isMine(this.uploads.get(id))).length : this.order.length;
  }

  /**
   * An object URL of the photo's bytes in this page's upload queue, made once per upload and
   * kept until the server's pictures replace it; null when the queue does not hold it.
   */
  localUrl(u) {
    if (this.localUrls.has(u.id)) return this.localUrls.get(u.id);
    let blob = null;
    try {
      blob = this.localBlob(u);
    } catch (e) {
      console.warn('could not look up the queued photo', e);
    }
    if (!blob || (blob.type && !blob.type.startsWith('image/'))) return null;
    const url = URL.createObjectURL(blob);
    this.localUrls.set(u.id, url);
    return url;
  }

  forgetLocal(id) {
    const url = this.localUrls.get(id);
    if (!url) return;
    this.localUrls.delete(id);
    URL.revokeObjectURL(url);
  }

  /**
   * What a tile draws: the thumbnail, over the Upload's placeholder until it has loaded; before it
   * exists the local copy (`data-picture=local`) or a neutral placeholder
   * (`data-picture=placeholder`), which breathes while the photo is being processed. Never the
   * original.
   */
  picture(u) {
    const thumb = thumbUrl(u);
    const placeholder = () => h('span', { class: 'tile-placeholder', 'data-testid': 'tile-placeholder', 'aria-hidden': 'true' });
    if (thumb) return { kind: 'thumb', el: withPlaceholder(h('img', { src: thumb, alt: '', loading: 'lazy', decoding: 'async', width: u.width || undefined, height: u.height || undefined }), u) };
    const local = u.status === STATUS.FAILED ? null : this.localUrl(u);
    if (!local) return { kind: 'placeholder', el: placeholder() };
    const img = h('img', { class: 'tile-local', src: local, alt: '', decoding: 'async' });
    // This browser cannot draw the file after all: the placeholder, not a broken image.
    img.addEventListener('error', () => {
      img.closest('.tile')?.setAttribute('data-picture', 'placeholder');
      img.replaceWith(placeholder());
    }, { once: true });
    return { kind: 'local', el: img };
  }

  tile(u) {
    const mine = this.isMine(u);
    // A video: a play mark and its length over the poster (or over the placeholder without one).
    const video = isVideo(u)
      ? h('span', { class: 'tile-video', 'data-testid': 'tile-video', 'aria-hidden': 'true' }, h('span', { class: 'tile-play' }, '▶'), durationText(u.duration_s))
      : null;
    const pending = u.review === REVIEW.PENDING;
    const badge = u.rejected ? t('rejected') : u.status === STATUS.HIDDEN ? t('hidden') : pending ? t('badge_pending') : u.status === STATUS.PROCESSING ? t('processing') : u.status === STATUS.FAILED ? t('failed') : null;
    const picture = this.picture(u);
    // While the organiser selects, a tap selects (the button says whether it is pressed).
    const selecting = Boolean(this.selection?.active);
    const chosen = selecting && this.selection.has(u.id);
    return h(
      'li',
      { class: chosen ? 'tile selected' : 'tile', 'data-upload-id': u.id, 'data-status': u.status, 'data-review': u.review || REVIEW.APPROVED, 'data-rejected': u.rejected ? 'true' : undefined, 'data-mine': mine ? 'true' : 'false', 'data-picture': picture.kind },
      h(
        'button',
        { type: 'button', class: 'tile-open', 'aria-label': tileLabel(u), 'aria-pressed': selecting ? String(chosen) : undefined, onclick: () => (this.selection?.active ? this.selection.toggle(u.id) : this.lightbox.open(u.id)) },
        picture.el,
        video,
      ),
      badge ? h('span', { class: 'badge' }, badge) : null,
      u.likes > 0 ? h('span', { class: 'tile-likes' }, t('likes', { n: u.likes })) : null,
      // A rejected photo tells its sender why (only they and the organiser see it).
      u.rejected ? h('p', { class: 'tile-reason', 'data-testid': 'tile-reason' }, u.rejected_reason ? t('rejected_reason', { reason: u.rejected_reason }) : t('rejected_no_reason')) : null,
    );
  }

  renderAll() {
    for (const id of this.order) {
      const old = this.grid.querySelector(`[data-upload-id="${id}"]`);
      if (old) old.replaceWith(this.tile(this.uploads.get(id)));
    }
    this.renderFooter();
  }

  renderFooter() {
    const none = this.visibleCount() === 0;
    this.empty.hidden = !(none && this.exhausted);
    this.empty.textContent = this.filterMine ? t('empty_mine') : t('empty');
    this.more.hidden = this.exhausted || Boolean(this.loading);
    this.more.textContent = t('load_more');
  }

  /** Follows the event's live stream: new photos appear, removed ones go. */
  live(onUpload) {
    if (!('EventSource' in window) || this.source) return;
    const source = new EventSource(`/api/v1/events/${encodeURIComponent(this.slug)}/live`);
    this.source = source;
    source.addEventListener('upload', (e) => {
      try {
        const u = JSON.parse(e.data);
        this.upsert(u);
        onUpload?.(u);
      } catch (err) {
        console.warn('bad live event', err);
      }
    });
    source.addEventListener('removed', (e) => {
      let id;
      try {
        id = JSON.parse(e.data).id;
      } catch (err) {
        console.warn('bad live event', err);
        return;
      }
      if (this.uploads.has(id)) this.reread(id);
    });
    source.onerror = () => {
      // A closed stream (404, 401) is not retried by the browser; an open one reconnects by itself.
      if (source.readyState === EventSource.CLOSED) this.source = null;
    };
  }

  neighbour(id, step) {
    const ids = this.filterMine ? this.order.filter((x) => this.isMine(this.uploads.get(x))) : this.order;
    const i = ids.indexOf(id);
    return i < 0 ? null : ids[i + step] ?? null;
  }
}

/**
 * A tile's accessible name: what it shows (a video's length, as its visible "▶ 0:05" says), the
 * file's name and who sent it.
 */
function tileLabel(u) {
  const by = t('by', { name: u.guest?.display_name ?? '' });
  if (!isVideo(u)) return `${u.filename} — ${by}`;
  const length = durationText(u.duration_s);
  return `${t('video')}${length ? ` ${length}` : ''}: ${u.filename} — ${by}`;
}

/**
 * Whether an upload's pictures are what they will stay: its thumbnail exists, processing failed,
 * or it is a video the server made no poster for (it plays without one).
 */
function picturesSettled(u) {
  return Boolean(u.urls?.thumb) || u.status === STATUS.FAILED || (isVideo(u) && u.poster === false && u.status !== STATUS.PROCESSING);
}
