// The review view: the photos waiting for approval one at a time, large (their preview), oldest
// first, with Approve and Reject (with an optional reason that only the photo's sender reads),
// Previous and Next, and Approve all. On a desktop the keys A, R, ← and → do the same, and the
// view says so. Each decision is one request to the moderation route (with its own
// Idempotency-Key); the view moves on at once and puts a photo back if the server refuses.

import { h, previewUrl, thumbUrl, withPlaceholder, isVideo } from './util.js';
import { t, onLangChange } from './i18n.js';
import { MessageArea } from './messages.js';
import { moderateMany } from './moderation.js';

/** Whether the keyboard is the organiser's tool here (a mouse or trackpad, not a finger). */
const desktop = () => window.matchMedia?.('(pointer: fine)').matches ?? true;

export class ReviewView {
  /**
   * @param {object} o
   * @param {string} o.slug
   * @param {() => object[]} o.waiting the photos waiting for approval, as the server last described them
   * @param {(items: object[], action: string) => void} o.onModerated what the server answered per photo
   */
  constructor({ slug, waiting, onModerated }) {
    this.slug = slug;
    this.waiting = waiting;
    this.onModerated = onModerated;
    this.queue = [];
    this.index = 0;
    // The page behind a modal dialog is inert: the view says its own refusals.
    this.messages = new MessageArea();
    this.reason = h('input', { type: 'text', id: 'review-reason', name: 'reason', maxlength: 200, autocomplete: 'off', 'data-testid': 'review-reason' });
    this.dialog = h('dialog', { class: 'review', 'data-testid': 'review', 'aria-labelledby': 'review-title' });
    // On the document: the control that had the focus may be gone with the photo it belonged to.
    document.addEventListener('keydown', (e) => this.dialog.open && this.key(e));
    this.dialog.addEventListener('close', () => {
      this.queue = [];
      this.messages.clear();
    });
    onLangChange(() => this.dialog.open && this.render());
    document.body.append(this.dialog);
  }

  /** Opens the view on the oldest waiting photo. */
  open() {
    this.queue = [...this.waiting()].sort((a, b) => (a.id < b.id ? -1 : 1));
    this.index = 0;
    this.render();
    if (!this.dialog.open) this.dialog.showModal();
    this.dialog.querySelector('[data-action=review-approve]')?.focus();
  }

  close() {
    if (this.dialog.open) this.dialog.close();
  }

  get current() {
    return this.queue[this.index] ?? null;
  }

  move(step) {
    const next = this.index + step;
    if (next < 0 || next >= this.queue.length) return;
    this.index = next;
    this.render({ keepFocus: true });
  }

  /** A photo arrived or changed while the view is open: a new waiting one joins the end. */
  seen(u) {
    if (!this.dialog.open || this.queue.some((q) => q.id === u.id)) return;
    this.queue.push(u);
    this.render();
  }

  /**
   * Approves or rejects the photo shown and moves on at once; the answer follows. A refusal puts
   * the photo back where it was and says why.
   */
  async decide(action) {
    const u = this.current;
    if (!u) return;
    const reason = action === 'reject' ? this.reason.value.trim() : '';
    const at = this.index;
    this.queue.splice(at, 1);
    if (this.index >= this.queue.length) this.index = Math.max(0, this.queue.length - 1);
    this.render({ keepFocus: true });
    try {
      this.onModerated(await moderateMany(this.slug, action, [u.id], reason), action);
    } catch (err) {
      this.queue.splice(Math.min(at, this.queue.length), 0, u);
      this.render({ keepFocus: true });
      this.messages.refusal(err);
    }
  }

  /** Approves every photo left in the view: one request per 200. */
  async approveAll(button) {
    const ids = this.queue.map((u) => u.id);
    if (!ids.length) return;
    button.disabled = true;
    try {
      this.onModerated(await moderateMany(this.slug, 'approve', ids), 'approve');
      this.queue = this.queue.filter((u) => !ids.includes(u.id));
      this.index = 0;
      this.render();
    } catch (err) {
      this.messages.refusal(err);
      button.disabled = false;
    }
  }

  key(e) {
    if (e.defaultPrevented || e.altKey || e.ctrlKey || e.metaKey) return;
    if (e.target === this.reason) {
      if (e.key === 'Enter') {
        e.preventDefault();
        this.decide('reject');
      }
      return;
    }
    if (e.target instanceof HTMLInputElement || e.target instanceof HTMLTextAreaElement) return;
    const key = e.key.length === 1 ? e.key.toLowerCase() : e.key;
    const act = { a: () => this.decide('approve'), r: () => this.decide('reject'), ArrowLeft: () => this.move(-1), ArrowRight: () => this.move(1) }[key];
    if (!act) return;
    e.preventDefault();
    act();
  }

  picture(u) {
    const src = previewUrl(u) || thumbUrl(u);
    if (!src || isVideo(u)) {
      // A video is judged by its poster here; the lightbox plays it.
      if (src) return withPlaceholder(h('img', { class: 'review-img', src, alt: u.filename || '', decoding: 'async' }), u, 'contain');
      return h('span', { class: 'lightbox-placeholder review-img', 'aria-hidden': 'true' });
    }
    return withPlaceholder(h('img', { class: 'review-img', src, alt: u.filename || '', decoding: 'async', width: u.width || undefined, height: u.height || undefined }), u, 'contain');
  }

  render({ keepFocus = false } = {}) {
    const focused = keepFocus && this.dialog.contains(document.activeElement) ? document.activeElement.dataset?.action : null;
    const u = this.current;
    const n = this.queue.length;
    this.dialog.toggleAttribute('data-empty', !u);
    this.dialog.dataset.left = String(n);
    const approve = h('button', { type: 'button', 'data-action': 'review-approve', 'aria-keyshortcuts': 'A', onclick: () => this.decide('approve') }, t('approve'), h('kbd', { 'aria-hidden': 'true' }, 'A'));
    const reject = h('button', { type: 'button', class: 'danger', 'data-action': 'review-reject', 'aria-keyshortcuts': 'R', onclick: () => this.decide('reject') }, t('review_reject'), h('kbd', { 'aria-hidden': 'true' }, 'R'));
    const all = h('button', { type: 'button', class: 'secondary', 'data-action': 'review-approve-all', hidden: n < 2 }, `${t('approve_all')} (${n})`);
    all.addEventListener('click', () => this.approveAll(all));
    const prev = h('button', { type: 'button', class: 'icon nav prev', 'data-action': 'review-previous', 'aria-label': t('previous'), 'aria-keyshortcuts': 'ArrowLeft', hidden: this.index === 0, onclick: () => this.move(-1) }, '‹');
    const next = h('button', { type: 'button', class: 'icon nav next', 'data-action': 'review-next', 'aria-label': t('next'), 'aria-keyshortcuts': 'ArrowRight', hidden: this.index >= n - 1, onclick: () => this.move(1) }, '›');
    const top = h('div', { class: 'review-top' },
      h('h2', { id: 'review-title' }, t('review_title')),
      h('p', { class: 'review-position', 'data-testid': 'review-position', role: 'status' }, u ? t('review_position', { i: this.index + 1, n }) : ''),
      h('button', { type: 'button', class: 'icon close', 'data-action': 'close', 'aria-label': t('close'), onclick: () => this.close() }, '✕'),
    );
    if (!u) {
      this.dialog.replaceChildren(h('div', { class: 'review-frame' }, top, h('p', { class: 'review-done', 'data-testid': 'review-done' }, t('review_done'))), this.messages.el);
      this.dialog.querySelector('[data-action=close]')?.focus();
      return;
    }
    this.dialog.setAttribute('data-upload-id', u.id);
    const label = h('label', { for: 'review-reason' }, t('review_reason'));
    this.dialog.replaceChildren(
      h('div', { class: 'review-frame' },
        top,
        h('div', { class: 'review-stage' }, this.picture(u), prev, next),
        h('div', { class: 'review-info' },
          h('p', { class: 'who' }, h('strong', {}, t('by', { name: u.guest?.display_name ?? '' })), ' · ', u.filename || ''),
          u.caption ? h('p', { class: 'caption' }, u.caption) : null,
          h('div', { class: 'review-actions' }, approve, reject, all),
          h('div', { class: 'review-reason' }, label, this.reason),
          h('p', { class: 'hint review-keys', 'data-testid': 'review-keys', hidden: !desktop() }, t('review_keys')),
        ),
      ),
      this.messages.el,
    );
    // The next photo is fetched while this one is judged.
    const ahead = this.queue[this.index + 1];
    if (ahead && previewUrl(ahead)) new Image().src = previewUrl(ahead);
    const again = focused && this.dialog.querySelector(`[data-action="${focused}"]:not([hidden])`);
    (again || (keepFocus ? approve : null))?.focus();
  }
}
