// One photo large, over the page: the preview, who took it, its caption, likes and comments,
// a link to save the original, and — for its uploader and the organiser — the controls that
// change it (moderation.js). Buttons at the sides, the arrow keys and a swipe step through the
// gallery's photos. Opening pushes a history entry, so a phone's Back button closes the photo
// instead of leaving the event; closing it any other way takes that entry back.

import { h, api, previewUrl, isVideo, capturedAt, STATUS, REVIEW } from './util.js';
import { withPlaceholder } from './placeholder.js';
import { t, formatWhen, onLangChange } from './i18n.js';
import { MessageArea } from './messages.js';
import { hideButton, approveButton, deleteButton, offerUndo } from './moderation.js';

// A swipe: at least this far sideways, and clearly more sideways than up or down.
const SWIPE_PX = 50;
const SWIPE_RATIO = 1.5;

/** The moment with its year when not this one; the raw time should the browser not format it. */
function safeWhen(iso) {
  try {
    return formatWhen(iso, { year: true });
  } catch {
    return iso;
  }
}

/** When the photo was taken (or, when its file does not say, uploaded), as a `<time>`. */
function takenAt(u) {
  const iso = capturedAt(u);
  const words = u.captured_from && u.captured_from !== 'upload' ? 'taken_when' : 'uploaded_when';
  return h('time', { datetime: iso, 'data-testid': 'taken-at', 'data-source': u.captured_from || 'upload' }, t(words, { when: safeWhen(iso) }));
}

/** Whether a key press belongs to a text field (the caret moves; the photo stays). */
function typing(target) {
  return target instanceof HTMLElement && (target.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName));
}

/** One photo large, with who took it, its caption, likes and comments. */
export class Lightbox {
  /** @param {import('./gallery.js').Gallery} gallery the photos it steps through */
  constructor(gallery) {
    this.gallery = gallery;
    this.current = null;
    // History: `entry` while the entry pushed on opening is the current one; `leaving` while
    // the `history.back()` that takes it away has not arrived yet.
    this.entry = false;
    this.leaving = false;
    this.swipe = null;
    // The page behind a modal dialog is inert: the lightbox says its own refusals.
    this.messages = new MessageArea();
    this.dialog = h('dialog', { class: 'lightbox', 'aria-label': t('photo') });
    // Escape closes the dialog after `cancel`; `close` comes a task later: the video stops at
    // once, not a moment after the dialog has gone.
    this.dialog.addEventListener('cancel', () => this.dialog.querySelector('video')?.pause());
    this.dialog.addEventListener('close', () => {
      // A closed dialog stays in the page: its video would go on playing unseen.
      this.dialog.querySelector('video')?.pause();
      this.current = null;
      this.swipe = null;
      this.messages.clear();
      this.dialog.removeAttribute('data-upload-id');
      if (this.entry) {
        this.entry = false;
        this.leaving = true;
        history.back();
      }
    });
    this.dialog.addEventListener('click', (e) => {
      if (e.target === this.dialog) this.close();
    });
    // On the document: a button that stepped may be gone, and the focus with it.
    document.addEventListener('keydown', (e) => {
      if (!this.dialog.open || e.defaultPrevented || typing(e.target) || e.altKey || e.ctrlKey || e.metaKey) return;
      if (e.key === 'ArrowLeft') this.step(-1);
      if (e.key === 'ArrowRight') this.step(1);
    });
    window.addEventListener('popstate', (e) => this.popped(e.state));
    gallery.onChange(() => this.renderNav());
    onLangChange(() => {
      this.dialog.setAttribute('aria-label', t('photo'));
      const u = this.current && this.gallery.uploads.get(this.current);
      if (u) {
        this.render(u);
        this.loadComments(u.id);
      }
    });
    document.body.append(this.dialog);
  }

  open(id, { from = 0 } = {}) {
    const u = this.gallery.uploads.get(id);
    if (!u) return;
    this.current = id;
    this.render(u, { from });
    if (!this.dialog.open) {
      this.dialog.showModal();
      this.remember(id);
    } else if (this.entry) {
      history.replaceState({ ...history.state, confettiPhoto: id }, '');
    }
    this.loadComments(id);
    // The loaded page may have ended: fetch more for "next".
    if (!this.gallery.neighbour(id, 1)) this.gallery.loadMore();
  }

  /** The history entry that Back takes away (pushed once the Back of an earlier close arrived). */
  remember(id) {
    if (this.leaving) return;
    history.pushState({ ...history.state, confettiPhoto: id }, '');
    this.entry = true;
  }

  popped(state) {
    if (this.leaving) {
      // The entry a close took back is gone; a photo opened meanwhile gets its own now.
      this.leaving = false;
      if (this.dialog.open && this.current) this.remember(this.current);
      return;
    }
    if (this.entry && !state?.confettiPhoto) {
      // Back: the photo closes, the page stays.
      this.entry = false;
      this.close();
    }
  }

  close() {
    this.dialog.querySelector('video')?.pause();
    if (this.dialog.open) this.dialog.close();
    this.current = null;
  }

  step(delta) {
    const next = this.current && this.gallery.neighbour(this.current, delta);
    if (next) this.open(next, { from: delta });
  }

  refresh(u) {
    if (this.current !== u.id) return;
    const old = this.dialog.querySelector('.lightbox-picture');
    if (old instanceof HTMLVideoElement && this.plays(u)) {
      // Playing on: only its poster may have arrived.
      if (u.urls?.preview && old.getAttribute('poster') !== u.urls.preview) old.setAttribute('poster', u.urls.preview);
    } else {
      const { src } = this.pictureSource(u);
      if (old && (old.getAttribute('src') || null) !== src) old.replaceWith(this.picture(u));
    }
    this.renderLikes(u);
  }

  /**
   * What the lightbox draws: the preview; before it exists the guest's own copy from the upload
   * queue, or a placeholder; a photo the server could not process, its original (nothing else
   * of it exists).
   */
  pictureSource(u) {
    if (u.urls?.preview) return { src: u.urls.preview, kind: 'preview' };
    if (u.status === STATUS.FAILED) return this.mayDownload(u) ? { src: previewUrl(u) || null, kind: 'original' } : { src: null, kind: 'placeholder' };
    const local = this.gallery.localUrl(u);
    return local ? { src: local, kind: 'local' } : { src: null, kind: 'placeholder' };
  }

  /** With guest downloads off, a guest gets only their own originals (the server says the same). */
  mayDownload(u) {
    const viewer = this.gallery.viewer();
    return Boolean(viewer.organiser || this.gallery.isMine(u) || viewer.downloads !== false);
  }

  /** A video plays inline from its original, which the viewer must be allowed to load. */
  plays(u) {
    return isVideo(u) && Boolean(u.urls?.original) && this.mayDownload(u);
  }

  picture(u, { from = 0 } = {}) {
    const { src, kind } = this.pictureSource(u);
    const enter = from > 0 ? 'enter-next' : from < 0 ? 'enter-previous' : null;
    if (this.plays(u)) {
      return h('video', {
        class: ['lightbox-picture', 'lightbox-video', enter].filter(Boolean).join(' '),
        'data-picture': 'video',
        'data-testid': 'lightbox-video',
        src: u.urls.original,
        poster: u.urls?.preview || undefined,
        controls: true,
        playsinline: true,
        preload: 'metadata',
        'aria-label': u.caption || u.filename,
      });
    }
    if (!src) {
      return h('div', { class: ['lightbox-picture', 'lightbox-placeholder', enter].filter(Boolean).join(' '), 'data-picture': kind, role: 'img', 'aria-label': t('photo_processing') },
        h('span', { class: 'lightbox-placeholder-text' }, t('photo_processing')));
    }
    const img = h('img', { class: ['lightbox-picture', 'lightbox-img', enter].filter(Boolean).join(' '), 'data-picture': kind, src, alt: u.caption || u.filename, draggable: 'false' });
    return kind === 'preview' ? withPlaceholder(img, u, 'contain') : img;
  }

  /** Previous and next show only where there is a photo to go to. */
  renderNav() {
    if (!this.current || !this.prevButton) return;
    this.prevButton.hidden = !this.gallery.neighbour(this.current, -1);
    this.nextButton.hidden = !this.gallery.neighbour(this.current, 1);
  }

  /** A finger's sideways swipe over the photo steps to the next (leftwards) or previous one. */
  swipeStart(e) {
    if (e.pointerType === 'mouse' || !e.isPrimary) return;
    this.swipe = { id: e.pointerId, x: e.clientX, y: e.clientY };
  }

  swipeEnd(e) {
    const s = this.swipe;
    this.swipe = null;
    if (!s || s.id !== e.pointerId || e.type === 'pointercancel') return;
    const dx = e.clientX - s.x;
    const dy = e.clientY - s.y;
    if (Math.abs(dx) >= SWIPE_PX && Math.abs(dx) >= SWIPE_RATIO * Math.abs(dy)) this.step(dx < 0 ? 1 : -1);
  }

  render(u, { from = 0 } = {}) {
    // The control that had the focus keeps it in the new view (or its twin, when it is gone).
    const focused = this.dialog.contains(document.activeElement) ? document.activeElement.dataset?.action : null;
    // A comment being typed survives a redraw of the same photo (a language change, the organiser
    // hiding it): only stepping to another photo starts an empty one.
    const typed = this.dialog.getAttribute('data-upload-id') === u.id ? this.dialog.querySelector('.comment-form input')?.value ?? '' : '';
    const viewer = this.gallery.viewer();
    const mine = this.gallery.isMine(u);
    this.dialog.setAttribute('data-upload-id', u.id);
    this.likeButton = h('button', { type: 'button', class: 'like', 'data-action': 'like', onclick: () => this.toggleLike() });
    this.comments = h('ul', { class: 'comments', 'data-testid': 'comments' });
    const input = h('input', { name: 'text', type: 'text', maxlength: 1000, required: true, autocomplete: 'off', placeholder: t('comment_placeholder'), 'aria-label': t('comment_placeholder'), 'data-action': 'comment' });
    input.value = typed;
    const form = h('form', { class: 'comment-form', onsubmit: (e) => this.comment(e, input) }, input, h('button', { type: 'submit' }, t('send')));
    const actions = h('div', { class: 'lightbox-actions' });
    if (viewer.guestId) actions.append(this.likeButton);
    if (u.urls?.original && this.mayDownload(u)) {
      // Same origin, so `download` saves the file under its name instead of opening it.
      actions.append(h('a', { class: 'button secondary download', 'data-action': 'download', href: u.urls.original, download: u.filename || '' }, h('span', { 'aria-hidden': 'true' }, '⤓'), t('download')));
    }
    if (viewer.organiser && u.review === REVIEW.PENDING) actions.append(approveButton(u, { messages: this.messages, onChanged: (changed) => this.hidden(changed) }));
    if (viewer.organiser) actions.append(hideButton(u, { messages: this.messages, onChanged: (changed) => this.hidden(changed) }));
    if (mine || viewer.organiser) actions.append(deleteButton(u, { messages: this.messages, onDeleted: () => this.deleted(u.id) }));
    if (viewer.organiser) actions.append(...this.gallery.extraActions(u, this.messages));
    this.prevButton = h('button', { type: 'button', class: 'icon nav prev', 'data-action': 'previous', 'aria-label': t('previous'), onclick: () => this.step(-1) }, '‹');
    this.nextButton = h('button', { type: 'button', class: 'icon nav next', 'data-action': 'next', 'aria-label': t('next'), onclick: () => this.step(1) }, '›');
    const stage = h('div', { class: 'lightbox-stage', 'data-testid': 'lightbox-stage' }, this.picture(u, { from }), this.prevButton, this.nextButton);
    stage.addEventListener('pointerdown', (e) => this.swipeStart(e));
    stage.addEventListener('pointerup', (e) => this.swipeEnd(e));
    stage.addEventListener('pointercancel', (e) => this.swipeEnd(e));
    this.dialog.replaceChildren(
      h(
        'div',
        { class: 'lightbox-frame' },
        h('div', { class: 'lightbox-top' },
          h('button', { type: 'button', class: 'icon close', 'data-action': 'close', 'aria-label': t('close'), onclick: () => this.close() }, '✕'),
        ),
        stage,
        h(
          'div',
          { class: 'lightbox-info' },
          h('p', { class: 'who' }, h('strong', {}, t('by', { name: u.guest?.display_name ?? '' })), ' · ', takenAt(u)),
          u.caption ? h('p', { class: 'caption' }, u.caption) : null,
          actions,
          h('h3', {}, t('comments')),
          this.comments,
          viewer.guestId ? form : null,
        ),
      ),
      this.messages.el,
    );
    this.renderNav();
    this.renderLikes(u);
    if (focused) {
      const same = this.dialog.querySelector(`[data-action="${focused}"]:not([hidden])`);
      const twin = focused === 'next' ? this.prevButton : focused === 'previous' ? this.nextButton : null;
      (same || (twin && !twin.hidden ? twin : this.dialog.querySelector('[data-action=close]')))?.focus();
    }
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
      this.messages.refusal(err);
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
      this.messages.refusal(err);
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

  /**
   * The photo is gone: it leaves the gallery (which closes this view) and the page says so; the
   * organiser may undo it for a few seconds.
   */
  deleted(id) {
    const u = this.gallery.uploads.get(id);
    this.gallery.remove(id);
    this.gallery.onDeleted(u);
    const messages = this.gallery.messages;
    if (u && messages && this.gallery.viewer().organiser) offerUndo(u, { messages, onRestored: (restored) => this.gallery.upsert(restored) });
    else messages?.note(() => t('deleted'));
  }
}
