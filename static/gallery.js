// The gallery: a grid of thumbnails, newest first, that loads the next page (keyset cursor)
// as one scrolls; a lightbox with the preview, likes and comments; and the live stream of new
// and removed photos. Every user-provided string is set as text, never as HTML.

import { h, api, ApiError } from './util.js';
import { t, lang, onLangChange } from './i18n.js';

const PAGE = 30;

/** The best image for a tile or the lightbox: derivatives once they exist, else the original. */
export function thumbUrl(u) {
  return u.urls?.thumb || u.urls?.preview || u.urls?.original;
}
export function previewUrl(u) {
  return u.urls?.preview || u.urls?.original;
}

/** Newest first: ids are time-ordered UUIDs; created_at breaks ties with other id schemes. */
function newer(a, b) {
  if (a.created_at !== b.created_at) return a.created_at > b.created_at;
  return a.id > b.id;
}

export class Gallery {
  /**
   * @param {object} o
   * @param {string} o.slug
   * @param {HTMLElement} o.root where the grid goes
   * @param {() => ({guestId?: string, organiser?: boolean})} o.viewer who is looking
   * @param {(upload) => void} [o.onDeleted]
   */
  constructor({ slug, root, viewer, onDeleted }) {
    this.slug = slug;
    this.viewer = viewer;
    this.onDeleted = onDeleted || (() => {});
    this.uploads = new Map();
    this.order = [];
    this.cursor = null;
    this.exhausted = false;
    this.loading = null;
    this.filterMine = false;
    this.listeners = new Set();

    this.grid = h('ul', { class: 'grid', 'data-testid': 'gallery' });
    this.empty = h('p', { class: 'empty' });
    this.more = h('button', { type: 'button', class: 'more secondary', onclick: () => this.loadMore() });
    this.sentinel = h('div', { class: 'sentinel', 'aria-hidden': 'true' });
    root.append(this.grid, this.empty, this.more, this.sentinel);
    this.lightbox = new Lightbox(this);

    if ('IntersectionObserver' in window) {
      this.observer = new IntersectionObserver((entries) => {
        if (entries.some((e) => e.isIntersecting)) this.loadMore();
      }, { rootMargin: '600px 0px' });
      this.observer.observe(this.sentinel);
    }
    onLangChange(() => this.renderAll());
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
    const params = new URLSearchParams({ limit: String(PAGE) });
    if (this.cursor) params.set('cursor', this.cursor);
    this.loading = api('GET', `/api/v1/events/${encodeURIComponent(this.slug)}/uploads?${params}`)
      .then((page) => {
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

  sentinelVisible() {
    const r = this.sentinel.getBoundingClientRect();
    return r.top < window.innerHeight + 600 && this.sentinel.offsetParent !== null;
  }

  /** Adds or refreshes one upload and its tile, keeping newest first. */
  upsert(u, { append = false } = {}) {
    const known = this.uploads.has(u.id);
    this.uploads.set(u.id, u);
    if (!known) {
      let index = this.order.length;
      if (!append || (this.order.length && newer(u, this.uploads.get(this.order[this.order.length - 1])))) {
        index = this.order.findIndex((id) => newer(u, this.uploads.get(id)));
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
    if (u.status === 'processing' || (!u.urls?.thumb && u.status !== 'failed')) this.watch(u.id);
    this.renderFooter();
    if (this.lightbox.current === u.id) this.lightbox.refresh(u);
    if (!append) this.emit();
  }

  remove(id) {
    if (!this.uploads.delete(id)) return;
    this.order = this.order.filter((x) => x !== id);
    this.grid.querySelector(`[data-upload-id="${id}"]`)?.remove();
    if (this.lightbox.current === id) this.lightbox.close();
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
        if (u.urls?.thumb || u.status === 'failed') {
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

  tile(u) {
    const mine = this.isMine(u);
    const badge = u.status === 'processing' ? t('processing') : u.status === 'hidden' ? t('hidden') : u.status === 'failed' ? t('failed') : null;
    return h(
      'li',
      { class: 'tile', 'data-upload-id': u.id, 'data-status': u.status, 'data-mine': mine ? 'true' : 'false' },
      h(
        'button',
        { type: 'button', class: 'tile-open', 'aria-label': `${u.filename} — ${t('by', { name: u.guest?.display_name ?? '' })}`, onclick: () => this.lightbox.open(u.id) },
        h('img', { src: thumbUrl(u), alt: '', loading: 'lazy', decoding: 'async', width: u.width || undefined, height: u.height || undefined }),
      ),
      badge ? h('span', { class: 'badge' }, badge) : null,
      u.likes > 0 ? h('span', { class: 'tile-likes' }, t('likes', { n: u.likes })) : null,
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

function time(iso) {
  try {
    return new Date(iso).toLocaleString(lang(), { weekday: 'short', hour: '2-digit', minute: '2-digit' });
  } catch {
    return iso;
  }
}

/** One photo large, with who took it, its caption, likes and comments. */
class Lightbox {
  constructor(gallery) {
    this.gallery = gallery;
    this.current = null;
    this.dialog = h('dialog', { class: 'lightbox', 'aria-label': 'Photo' });
    this.dialog.addEventListener('close', () => {
      this.current = null;
    });
    this.dialog.addEventListener('click', (e) => {
      if (e.target === this.dialog) this.close();
    });
    this.dialog.addEventListener('keydown', (e) => {
      if (e.key === 'ArrowLeft') this.step(-1);
      if (e.key === 'ArrowRight') this.step(1);
    });
    document.body.append(this.dialog);
  }

  open(id) {
    this.current = id;
    this.render(this.gallery.uploads.get(id));
    if (!this.dialog.open) this.dialog.showModal();
    this.loadComments(id);
    // The loaded page may have ended: fetch more for "next".
    if (!this.gallery.neighbour(id, 1)) this.gallery.loadMore();
  }

  close() {
    if (this.dialog.open) this.dialog.close();
    this.current = null;
  }

  step(delta) {
    const next = this.current && this.gallery.neighbour(this.current, delta);
    if (next) this.open(next);
  }

  refresh(u) {
    if (this.current !== u.id) return;
    const img = this.dialog.querySelector('.lightbox-img');
    if (img && img.getAttribute('src') !== previewUrl(u)) img.src = previewUrl(u);
    this.renderLikes(u);
  }

  render(u) {
    const viewer = this.gallery.viewer();
    const mine = this.gallery.isMine(u);
    this.likeButton = h('button', { type: 'button', class: 'like', 'data-action': 'like', onclick: () => this.toggleLike() });
    this.comments = h('ul', { class: 'comments', 'data-testid': 'comments' });
    const input = h('input', { name: 'text', type: 'text', maxlength: 1000, required: true, autocomplete: 'off', placeholder: t('comment_placeholder'), 'aria-label': t('comment_placeholder') });
    const form = h('form', { class: 'comment-form', onsubmit: (e) => this.comment(e, input) }, input, h('button', { type: 'submit' }, t('send')));
    const actions = h('div', { class: 'lightbox-actions' });
    if (viewer.guestId) actions.append(this.likeButton);
    if (viewer.organiser) {
      actions.append(
        h('button', { type: 'button', class: 'secondary', 'data-action': 'hide', onclick: () => this.setHidden(u.id, u.status !== 'hidden') }, u.status === 'hidden' ? t('unhide') : t('hide')),
      );
    }
    if (mine || viewer.organiser) {
      actions.append(h('button', { type: 'button', class: 'danger', 'data-action': 'delete', onclick: () => this.remove(u.id) }, t('delete')));
    }
    this.dialog.replaceChildren(
      h(
        'div',
        { class: 'lightbox-frame' },
        h('div', { class: 'lightbox-top' },
          h('button', { type: 'button', class: 'icon', 'aria-label': t('previous'), onclick: () => this.step(-1) }, '‹'),
          h('button', { type: 'button', class: 'icon', 'aria-label': t('next'), onclick: () => this.step(1) }, '›'),
          h('button', { type: 'button', class: 'icon close', 'data-action': 'close', 'aria-label': t('close'), onclick: () => this.close() }, '✕'),
        ),
        h('img', { class: 'lightbox-img', src: previewUrl(u), alt: u.caption || u.filename }),
        h(
          'div',
          { class: 'lightbox-info' },
          h('p', { class: 'who' }, h('strong', {}, t('by', { name: u.guest?.display_name ?? '' })), ' · ', time(u.created_at)),
          u.caption ? h('p', { class: 'caption' }, u.caption) : null,
          actions,
          h('h3', {}, t('comments')),
          this.comments,
          viewer.guestId ? form : null,
        ),
      ),
    );
    this.renderLikes(u);
  }

  renderLikes(u) {
    if (!this.likeButton) return;
    this.likeButton.setAttribute('aria-pressed', u.liked_by_me ? 'true' : 'false');
    this.likeButton.replaceChildren(h('span', { class: 'heart', 'aria-hidden': 'true' }, u.liked_by_me ? '♥' : '♡'), ` ${t('like')} · `, h('span', { class: 'like-count' }, String(u.likes ?? 0)));
  }

  async toggleLike() {
    const u = this.gallery.uploads.get(this.current);
    if (!u) return;
    const want = !u.liked_by_me;
    // Shown at once; the server's answer corrects it.
    const optimistic = { ...u, liked_by_me: want, likes: Math.max(0, (u.likes ?? 0) + (want ? 1 : -1)) };
    this.gallery.upsert(optimistic);
    try {
      const r = await api(want ? 'PUT' : 'DELETE', `/api/v1/uploads/${u.id}/like`);
      this.gallery.upsert({ ...optimistic, likes: r.likes, liked_by_me: r.liked_by_me });
    } catch (e) {
      console.warn('like failed', e);
      this.gallery.upsert(u);
    }
  }

  async loadComments(id) {
    try {
      const r = await api('GET', `/api/v1/uploads/${id}/comments`);
      if (this.current !== id) return;
      this.renderComments(r.items || []);
    } catch (e) {
      if (this.current === id) this.renderComments([]);
    }
  }

  renderComments(items) {
    this.comments.replaceChildren(
      ...(items.length
        ? items.map((c) => h('li', { class: 'comment', 'data-comment-id': c.id }, h('strong', {}, c.guest?.display_name ?? ''), ' ', h('span', { class: 'comment-text' }, c.text)))
        : [h('li', { class: 'muted' }, t('no_comments'))]),
    );
  }

  async comment(e, input) {
    e.preventDefault();
    const text = input.value.trim();
    const id = this.current;
    if (!text || !id) return;
    input.disabled = true;
    try {
      await api('POST', `/api/v1/uploads/${id}/comments`, { text });
      input.value = '';
      const u = this.gallery.uploads.get(id);
      if (u) this.gallery.upsert({ ...u, comments: (u.comments ?? 0) + 1 });
      await this.loadComments(id);
    } catch (err) {
      alert(err.message);
    } finally {
      input.disabled = false;
      input.focus();
    }
  }

  async setHidden(id, hidden) {
    try {
      const u = await api('PATCH', `/api/v1/uploads/${id}`, { hidden });
      this.gallery.upsert(u);
      this.render(u);
      this.loadComments(id);
    } catch (err) {
      alert(err.message);
    }
  }

  async remove(id) {
    if (!confirm(t('confirm_delete'))) return;
    try {
      await api('DELETE', `/api/v1/uploads/${id}`);
    } catch (err) {
      if (!(err instanceof ApiError && err.status === 404)) {
        alert(err.message);
        return;
      }
    }
    const u = this.gallery.uploads.get(id);
    this.gallery.remove(id);
    this.gallery.onDeleted(u);
  }
}
