// One photo large, over the page: the preview, who took it, its caption, likes and comments,
// and — for its uploader and the organiser — the controls that change it (moderation.js).
// Left and right step through the gallery's photos.

import { h, api, previewUrl } from './util.js';
import { t, lang } from './i18n.js';
import { MessageArea, errorText } from './messages.js';
import { hideButton, deleteButton } from './moderation.js';

function time(iso) {
  try {
    return new Date(iso).toLocaleString(lang(), { weekday: 'short', hour: '2-digit', minute: '2-digit' });
  } catch {
    return iso;
  }
}

/** One photo large, with who took it, its caption, likes and comments. */
export class Lightbox {
  /** @param {import('./gallery.js').Gallery} gallery the photos it steps through */
  constructor(gallery) {
    this.gallery = gallery;
    this.current = null;
    // The page behind a modal dialog is inert: the lightbox says its own refusals.
    this.messages = new MessageArea();
    this.dialog = h('dialog', { class: 'lightbox', 'aria-label': 'Photo' });
    this.dialog.addEventListener('close', () => {
      this.current = null;
      this.messages.clear();
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
    if (viewer.organiser) actions.append(hideButton(u, { messages: this.messages, onChanged: (changed) => this.hidden(changed) }));
    if (mine || viewer.organiser) actions.append(deleteButton(u, { messages: this.messages, onDeleted: () => this.deleted(u.id) }));
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
      this.messages.el,
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
    } catch (err) {
      this.gallery.upsert(u);
      this.messages.error(() => errorText(err));
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
      this.messages.error(() => errorText(err));
    } finally {
      input.disabled = false;
      input.focus();
    }
  }

  /** The organiser hid or showed the photo: its tile and this view follow. */
  hidden(u) {
    this.gallery.upsert(u);
    if (this.current !== u.id) return;
    this.render(u);
    this.loadComments(u.id);
  }

  /** The photo is gone: it leaves the gallery (which closes this view) and the page says so. */
  deleted(id) {
    const u = this.gallery.uploads.get(id);
    this.gallery.remove(id);
    this.gallery.onDeleted(u);
    this.gallery.messages?.note(() => t('deleted'));
  }
}
