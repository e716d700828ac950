// Selecting photos on the organiser's gallery: "Select" turns the tiles into check boxes (a tap
// selects, the lightbox stays shut), "All waiting" and "All shown" select many at once, and
// Approve, Reject (with an optional reason), Hide and Delete act on the whole selection in one
// request each (the moderation route; delete is asked in place first). The bar stays at the
// bottom of the screen while selecting.

import { h } from './util.js';
import { t, onLangChange } from './i18n.js';
import { confirmInPlace } from './messages.js';
import { moderateMany } from './moderation.js';

const ACTIONS = ['approve', 'reject', 'hide', 'delete'];

export class Selection {
  /**
   * @param {object} o
   * @param {string} o.slug
   * @param {import('./gallery.js').Gallery} o.gallery whose tiles are selected
   * @param {import('./messages.js').MessageArea} o.messages the page's
   * @param {() => string[]} o.waiting the ids of the photos waiting for approval
   * @param {(items: object[], action: string) => void} o.onModerated what the server answered per photo
   */
  constructor({ slug, gallery, messages, waiting, onModerated }) {
    this.slug = slug;
    this.gallery = gallery;
    this.messages = messages;
    this.waiting = waiting;
    this.onModerated = onModerated;
    this.active = false;
    this.ids = new Set();
    gallery.selection = this;
    this.toggleButton = h('button', { type: 'button', class: 'secondary small', 'data-action': 'select-mode', 'aria-pressed': 'false', onclick: () => this.setActive(!this.active) });
    this.count = h('span', { class: 'select-count', 'data-testid': 'select-count', role: 'status' });
    this.hint = h('span', { class: 'hint' });
    this.selectWaiting = h('button', { type: 'button', class: 'secondary small', 'data-action': 'select-waiting', onclick: () => this.selectMany(this.waiting()) });
    this.selectAll = h('button', { type: 'button', class: 'secondary small', 'data-action': 'select-all', onclick: () => this.selectMany(this.gallery.order) });
    this.clear = h('button', { type: 'button', class: 'secondary small', 'data-action': 'select-none', onclick: () => this.selectMany([], { replace: true }) });
    this.reason = h('input', { type: 'text', name: 'reason', maxlength: 200, autocomplete: 'off', 'data-testid': 'select-reason' });
    this.buttons = Object.fromEntries(ACTIONS.map((action) => [action, h('button', {
      type: 'button',
      class: action === 'delete' ? 'danger small' : action === 'approve' ? 'small' : 'secondary small',
      'data-action': `selected-${action}`,
      onclick: (e) => this.act(action, e.currentTarget),
    })]));
    this.bar = h('div', { class: 'select-bar', 'data-testid': 'select-bar', hidden: true },
      h('div', { class: 'row' }, this.count, this.hint, this.selectWaiting, this.selectAll, this.clear),
      h('div', { class: 'row select-actions' }, ...ACTIONS.map((a) => this.buttons[a]),
        h('label', { class: 'select-reason' }, h('span', { class: 'visually-hidden' }, t('review_reason')), this.reason)),
    );
    this.reasonLabel = this.bar.querySelector('.select-reason .visually-hidden');
    onLangChange(() => this.render());
    this.render();
  }

  has(id) {
    return this.ids.has(id);
  }

  setActive(on) {
    this.active = on;
    if (!on) this.ids.clear();
    this.gallery.grid.classList.toggle('selecting', on);
    this.gallery.renderAll();
    this.render();
  }

  /** A tap on a tile while selecting. */
  toggle(id) {
    if (!this.ids.delete(id)) this.ids.add(id);
    this.mark(id);
    this.render();
  }

  selectMany(ids, { replace = false } = {}) {
    if (replace) this.ids.clear();
    for (const id of ids) if (this.gallery.uploads.has(id)) this.ids.add(id);
    for (const id of this.gallery.order) this.mark(id);
    this.render();
  }

  /** The tile shows whether it is selected, to the eye and to a screen reader. */
  mark(id) {
    const tile = this.gallery.grid.querySelector(`[data-upload-id="${id}"]`);
    if (!tile) return;
    tile.classList.toggle('selected', this.ids.has(id));
    tile.querySelector('.tile-open')?.setAttribute('aria-pressed', String(this.ids.has(id)));
  }

  /** A photo left the gallery: it leaves the selection too. */
  forget(id) {
    if (this.ids.delete(id)) this.render();
  }

  async act(action, button) {
    const ids = [...this.ids];
    if (!ids.length) return;
    if (action === 'delete') {
      const question = ids.length === 1 ? t('confirm_delete_one_selected') : t('confirm_delete_n', { n: ids.length });
      if (!(await confirmInPlace(button, { question, confirm: t('delete') }))) return;
    }
    for (const b of Object.values(this.buttons)) b.disabled = true;
    try {
      const items = await moderateMany(this.slug, action, ids, this.reason.value.trim());
      this.ids.clear();
      this.onModerated(items, action);
      const n = items.filter((i) => i.result !== 'not_found').length;
      const name = t(`action_${action}`);
      this.messages.note(() => (n === 1 ? t('moderated_note_one', { action: name }) : t('moderated_note', { action: name, n })));
    } catch (err) {
      this.messages.refusal(err);
    } finally {
      for (const b of Object.values(this.buttons)) b.disabled = false;
      for (const id of this.gallery.order) this.mark(id);
      this.render();
    }
  }

  render() {
    const n = this.ids.size;
    this.toggleButton.textContent = this.active ? t('select_done') : t('select_mode');
    this.toggleButton.setAttribute('aria-pressed', String(this.active));
    this.bar.hidden = !this.active;
    this.count.textContent = n === 1 ? t('select_count_one') : t('select_count', { n });
    this.hint.textContent = n ? '' : t('select_hint');
    this.hint.hidden = n > 0;
    this.selectWaiting.textContent = t('select_waiting');
    this.selectWaiting.hidden = this.waiting().length === 0;
    this.selectAll.textContent = t('select_all');
    this.clear.textContent = t('select_clear');
    this.clear.hidden = n === 0;
    for (const action of ACTIONS) {
      this.buttons[action].textContent = t(`action_${action}`);
      this.buttons[action].disabled = n === 0;
    }
    this.reasonLabel.textContent = t('review_reason');
    this.reason.placeholder = t('reject_reason_placeholder');
  }
}
