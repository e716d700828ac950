// The organiser's host modes: the "Host modes" card (the review gate, whose photos guests see,
// the time the gallery opens) and the list of photos waiting for approval, with Approve, Approve
// all (one moderation request) and Review (the large view, review-view.js). Approving makes the
// photo appear for everyone, live.

import { h, api, ApiError, thumbUrl, REVIEW, STATUS } from './util.js';
import { withPlaceholder } from './placeholder.js';
import { t, onLangChange, formatWhen } from './i18n.js';
import { showError } from './messages.js';
import { moderateMany } from './moderation.js';

/** `YYYY-MM-DDTHH:MM` in this device's time zone: what a `datetime-local` input holds. */
function localInput(iso) {
  if (!iso) return '';
  const d = new Date(iso);
  const pad = (n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

export class HostModesCard {
  /**
   * @param {{slug: string, onChanged: (event) => void}} o `onChanged`: the event as the server
   *   answered a change
   */
  constructor({ slug, onChanged }) {
    this.slug = slug;
    this.onChanged = onChanged;
    this.event = {};
    this.review = h('input', { type: 'checkbox', name: 'review_uploads', id: 'review_uploads', class: 'switch' });
    this.gallery = h('select', { name: 'gallery', id: 'gallery_mode' }, h('option', { value: 'everyone' }), h('option', { value: 'own_uploads' }));
    this.opensAt = h('input', { type: 'datetime-local', name: 'gallery_opens_at', id: 'gallery_opens_at' });
    this.labels = {
      title: h('h2', {}),
      review: h('label', { for: 'review_uploads' }),
      reviewHint: h('p', { class: 'hint' }),
      gallery: h('label', { for: 'gallery_mode' }),
      opensAt: h('label', { for: 'gallery_opens_at' }),
      opensHint: h('p', { class: 'hint' }),
      save: h('button', { type: 'submit', class: 'secondary' }),
      openNow: h('button', { type: 'button', class: 'secondary', 'data-action': 'open-now' }),
    };
    this.opensShown = h('p', { class: 'hint', 'data-testid': 'opens-at-shown' });
    this.note = h('p', { class: 'note', role: 'status' });
    const opensForm = h('form', { class: 'opens-form' }, this.labels.opensAt, this.labels.opensHint, this.opensAt, h('div', { class: 'row' }, this.labels.save, this.labels.openNow), this.opensShown);
    this.el = h(
      'div',
      { class: 'card host-modes', 'data-testid': 'host-modes' },
      this.labels.title,
      h('div', { class: 'row switch-row' }, this.review, this.labels.review),
      this.labels.reviewHint,
      h('div', { class: 'field' }, this.labels.gallery, this.gallery),
      opensForm,
      this.note,
    );
    this.review.addEventListener('change', () => this.change({ review_uploads: this.review.checked }));
    this.gallery.addEventListener('change', () => this.change({ gallery: this.gallery.value }));
    opensForm.addEventListener('submit', (e) => {
      e.preventDefault();
      const at = this.opensAt.value ? new Date(this.opensAt.value) : null;
      this.change({ gallery_opens_at: at && !Number.isNaN(at.getTime()) ? at.toISOString() : null });
    });
    this.labels.openNow.addEventListener('click', () => this.change({ gallery_opens_at: null }));
    onLangChange(() => this.render(this.event));
  }

  async change(patch) {
    this.note.textContent = '';
    try {
      const event = await api('PATCH', `/api/v1/events/${encodeURIComponent(this.slug)}`, patch);
      this.note.textContent = t('saved');
      this.onChanged(event);
    } catch (err) {
      showError(this.note, err);
      this.render(this.event);
    }
  }

  /** Shows the event's modes as the server last described them. */
  render(event) {
    this.event = event || {};
    const l = this.labels;
    l.title.textContent = t('host_modes');
    l.review.textContent = t('review_uploads');
    l.reviewHint.textContent = t('review_hint');
    l.gallery.textContent = t('gallery_guests_see');
    this.gallery.options[0].textContent = t('gallery_everyone');
    this.gallery.options[1].textContent = t('gallery_own_uploads');
    l.opensAt.textContent = t('opens_at_label');
    l.opensHint.textContent = t('opens_at_hint');
    l.save.textContent = t('save');
    l.openNow.textContent = t('open_now');
    this.review.checked = Boolean(this.event.review_uploads);
    this.gallery.value = this.event.gallery || 'everyone';
    if (document.activeElement !== this.opensAt) this.opensAt.value = localInput(this.event.gallery_opens_at);
    const at = this.event.gallery_opens_at;
    this.opensShown.textContent = at && this.event.gallery_open === false ? t('opens_at_set', { when: formatWhen(at) }) : t('opens_at_none');
    l.openNow.hidden = !at;
  }
}

/** The photos waiting for approval, newest first, with Approve and Approve all. */
export class PendingList {
  /**
   * @param {{slug: string, messages: import('./messages.js').MessageArea, onApproved: (upload) => void, onCount?: (n: number) => void, onReview?: () => void, onModerated?: (items: object[]) => void}} o
   *   `onApproved`: a photo as the server answered its approval; `onCount`: how many wait now;
   *   `onReview`: open the review view; `onModerated`: the answer of Approve all, per photo
   */
  constructor({ slug, messages, onApproved, onCount, onReview, onModerated }) {
    this.onCount = onCount || (() => {});
    this.onModerated = onModerated || ((items) => items.forEach((i) => (i.upload ? this.seen(i.upload) : this.gone(i.id))));
    this.slug = slug;
    this.messages = messages;
    this.onApproved = onApproved;
    this.items = new Map();
    this.gate = false;
    this.title = h('h2', {});
    this.none = h('p', { class: 'muted' });
    this.list = h('ul', { class: 'pending-list' });
    this.all = h('button', { type: 'button', 'data-action': 'approve-all' });
    this.all.addEventListener('click', () => this.approveAll());
    this.review = h('button', { type: 'button', 'data-action': 'review-open', onclick: () => onReview?.() });
    this.el = h('section', { class: 'card pending', 'data-testid': 'pending', hidden: true }, h('div', { class: 'row pending-head' }, this.title, this.review, this.all), this.none, this.list);
    onLangChange(() => this.render());
  }

  /** Reads every waiting photo (a page at a time). */
  async load() {
    let cursor = null;
    const seen = new Map();
    try {
      do {
        const params = new URLSearchParams({ review: REVIEW.PENDING, limit: '100' });
        if (cursor) params.set('cursor', cursor);
        const page = await api('GET', `/api/v1/events/${encodeURIComponent(this.slug)}/uploads?${params}`);
        for (const u of page.items) seen.set(u.id, u);
        cursor = page.next_cursor;
      } while (cursor);
    } catch (e) {
      console.warn('could not load the photos waiting for approval', e);
      return;
    }
    this.items = seen;
    this.render();
  }

  /** Whether the event's review gate is on: the list shows while it is, or while photos wait. */
  setGate(on) {
    this.gate = Boolean(on);
    this.render();
  }

  /** A photo as the server now describes it (live, or after a change): in the list or out. */
  seen(u) {
    const waiting = u.review === REVIEW.PENDING && u.status !== STATUS.HIDDEN;
    const known = this.items.get(u.id);
    if (waiting) {
      if (known && known.status === u.status && thumbUrl(known) === thumbUrl(u)) return;
      this.items.set(u.id, u);
    } else if (!this.items.delete(u.id)) return;
    this.render();
  }

  gone(id) {
    if (this.items.delete(id)) this.render();
  }

  get count() {
    return this.items.size;
  }

  async approve(id, button) {
    if (button) button.disabled = true;
    try {
      const u = await api('PATCH', `/api/v1/uploads/${id}`, { approved: true });
      this.seen(u);
      this.onApproved(u);
      return true;
    } catch (err) {
      // Deleted meanwhile: nothing left to approve.
      if (err instanceof ApiError && err.status === 404) {
        this.gone(id);
        return true;
      }
      this.messages.refusal(err);
      if (button) button.disabled = false;
      return false;
    }
  }

  /** Approves every waiting photo: one request per 200 (the moderation route). */
  async approveAll() {
    this.all.disabled = true;
    try {
      this.onModerated(await moderateMany(this.slug, 'approve', [...this.items.keys()]));
    } catch (err) {
      this.messages.refusal(err);
    } finally {
      this.all.disabled = false;
    }
  }

  render() {
    const n = this.items.size;
    this.onCount(n);
    this.el.hidden = !this.gate && n === 0;
    this.el.dataset.pending = String(n);
    this.title.textContent = t('pending_title', { n });
    this.all.textContent = t('approve_all');
    this.all.hidden = n < 2;
    this.review.textContent = t('review_open');
    this.review.hidden = n === 0;
    this.none.textContent = t('pending_none');
    this.none.hidden = n > 0;
    const ordered = [...this.items.values()].sort((a, b) => (a.id < b.id ? 1 : -1));
    this.list.replaceChildren(
      ...ordered.map((u) => {
        const thumb = thumbUrl(u);
        const button = h('button', { type: 'button', class: 'small', 'data-action': 'approve' }, t('approve'));
        button.addEventListener('click', () => this.approve(u.id, button));
        return h(
          'li',
          { class: 'pending-item', 'data-upload-id': u.id },
          thumb ? withPlaceholder(h('img', { src: thumb, alt: '', loading: 'lazy', width: 64, height: 64 }), u) : h('span', { class: 'tile-placeholder', 'aria-hidden': 'true' }),
          h('span', { class: 'pending-by' }, u.guest?.display_name ?? ''),
          button,
        );
      }),
    );
  }
}
