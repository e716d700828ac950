// The organiser's "Guest page" card: what guests see at the top of their page and may do there.
// The welcome text, the cover (chosen with "Set as cover" in a photo's lightbox, removed here),
// whether guests may save each other's photos, and the window in which uploads are open
// (the event's times, typed in this device's time zone). Each change is one PATCH of the event.

import { h, STATUS } from './util.js';
import { t, onLangChange } from './i18n.js';

/** A `datetime-local` value ("2026-06-14T14:00") for an RFC 3339 time, in this device's zone. */
function localInput(iso) {
  const d = iso ? new Date(iso) : null;
  if (!d || Number.isNaN(d.getTime())) return '';
  const p = (n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}`;
}

/** The RFC 3339 time of a `datetime-local` value (read in this device's zone); null when empty. */
function fromInput(value) {
  if (!value) return null;
  const d = new Date(value);
  return Number.isNaN(d.getTime()) ? null : d.toISOString();
}

export class GuestPageCard {
  /**
   * @param {object} o
   * @param {(patch: object, note: HTMLElement) => Promise<void>} o.change sends a change of the
   *   event and says how it went in `note`
   * @param {HTMLElement} o.galleryRoot where the gallery draws its tiles (the cover's is marked)
   * @param {() => (import('./gallery.js').Gallery | null)} o.gallery
   */
  constructor({ change, galleryRoot, gallery }) {
    this.change = change;
    this.gallery = gallery;
    this.galleryRoot = galleryRoot;
    this.event = null;
    this.note = h('p', { class: 'note', role: 'status', 'data-testid': 'page-note' });

    this.heading = h('h2', {});
    this.welcomeLabel = h('label', { for: 'welcome_text' });
    this.welcome = h('textarea', { id: 'welcome_text', name: 'welcome_text', rows: 4, maxlength: 1000 });
    this.welcomeSave = h('button', { type: 'submit', class: 'secondary', 'data-action': 'save-welcome' });
    const welcomeForm = h('form', { class: 'welcome-form' }, this.welcomeLabel, this.welcome, h('div', { class: 'row end' }, this.welcomeSave));
    welcomeForm.addEventListener('submit', (e) => {
      e.preventDefault();
      this.change({ welcome_text: this.welcome.value }, this.note);
    });

    this.coverLabel = h('p', { class: 'field-label' });
    this.coverThumb = h('img', { class: 'cover-thumb', alt: '', width: 96, height: 64, hidden: true });
    this.coverNone = h('p', { class: 'hint' });
    this.coverRemove = h('button', { type: 'button', class: 'secondary small', 'data-action': 'remove-cover', onclick: () => this.change({ cover_upload_id: null }, this.note) });
    const cover = h('div', { class: 'cover-row', 'data-testid': 'cover-setting' }, this.coverThumb, this.coverNone, this.coverRemove);

    this.downloads = h('input', { type: 'checkbox', name: 'guest_downloads', id: 'guest_downloads', class: 'switch' });
    this.downloadsLabel = h('label', { for: 'guest_downloads' });
    this.downloads.addEventListener('change', () => this.change({ guest_downloads: this.downloads.checked }, this.note));

    this.windowLabel = h('p', { class: 'field-label' });
    this.windowHint = h('p', { class: 'hint' });
    this.ends = {};
    const endRow = (field) => {
      const input = h('input', { type: 'datetime-local', id: field, name: field });
      const label = h('label', { for: field });
      const clear = h('button', { type: 'button', class: 'secondary small', 'data-action': `clear-${field}`, onclick: () => this.change({ [field]: null }, this.note) });
      this.ends[field] = { input, label, clear };
      return h('div', { class: 'window-end' }, label, h('div', { class: 'row' }, input, clear));
    };
    this.windowSave = h('button', { type: 'submit', class: 'secondary', 'data-action': 'save-window' });
    const windowForm = h('form', { class: 'window-form' }, this.windowLabel, endRow('uploads_open_from'), endRow('uploads_open_until'), h('div', { class: 'row end' }, this.windowSave), this.windowHint);
    windowForm.addEventListener('submit', (e) => {
      e.preventDefault();
      this.change({ uploads_open_from: fromInput(this.ends.uploads_open_from.input.value), uploads_open_until: fromInput(this.ends.uploads_open_until.input.value) }, this.note);
    });

    this.el = h('div', { class: 'card guest-page', 'data-testid': 'guest-page-card' },
      this.heading, welcomeForm, this.coverLabel, cover,
      h('div', { class: 'row switch-row' }, this.downloads, this.downloadsLabel),
      windowForm, this.note);

    // The cover's tile is marked (the gallery redraws tiles: look again then).
    new MutationObserver(() => this.markTiles()).observe(galleryRoot, { childList: true, subtree: true });
    onLangChange(() => this.render(this.event));
  }

  /** Shows the event's page settings (the organiser's view of the event). */
  render(event) {
    this.event = event;
    if (!event) return;
    this.heading.textContent = t('guest_page');
    this.welcomeLabel.textContent = t('welcome_text');
    this.welcomeSave.textContent = t('save');
    if (document.activeElement !== this.welcome) this.welcome.value = event.welcome_text || '';
    this.coverLabel.textContent = t('cover');
    const id = event.cover_upload_id;
    this.coverThumb.hidden = !id;
    if (id) this.coverThumb.src = `/api/v1/uploads/${id}/thumb`;
    else this.coverThumb.removeAttribute('src');
    this.coverNone.hidden = Boolean(id);
    this.coverNone.textContent = t('cover_none');
    this.coverRemove.hidden = !id;
    this.coverRemove.textContent = t('cover_remove');
    this.downloads.checked = event.guest_downloads !== false;
    this.downloadsLabel.textContent = t('guest_downloads');
    this.windowLabel.textContent = t('upload_window');
    this.windowHint.textContent = t('upload_window_hint');
    this.windowSave.textContent = t('save');
    for (const [field, end] of Object.entries(this.ends)) {
      end.label.textContent = field === 'uploads_open_from' ? t('window_start') : t('window_end');
      end.clear.textContent = t('clear');
      end.clear.hidden = !event[field];
      if (document.activeElement !== end.input) end.input.value = localInput(event[field]);
    }
    this.markTiles();
  }

  /** The cover's own tile says it is the cover (a mark over the photo, no taller tile). */
  markTiles() {
    const gallery = this.gallery();
    if (!gallery || !this.event) return;
    for (const tile of this.galleryRoot.querySelectorAll('.tile[data-upload-id]')) {
      const isCover = tile.dataset.uploadId === this.event.cover_upload_id;
      let mark = tile.querySelector(':scope > .tile-cover');
      if (isCover && mark?.dataset.lang === t('cover')) continue;
      mark?.remove();
      if (!isCover) continue;
      mark = h('span', { class: 'tile-cover is-cover', 'data-testid': 'cover-mark' }, `★ ${t('cover')}`);
      mark.dataset.lang = t('cover');
      tile.append(mark);
    }
  }

  /**
   * "Set as cover" for the organiser's lightbox: for a ready, shown photo that is not the cover
   * already; null otherwise.
   */
  coverButton(u) {
    if (u.status !== STATUS.READY || u.id === this.event?.cover_upload_id) return null;
    return h('button', { type: 'button', class: 'secondary', 'data-action': 'set-cover', onclick: () => this.change({ cover_upload_id: u.id }, this.note) }, t('cover_set'));
  }
}
