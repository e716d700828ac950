// The event's name, as the organiser sets it: guests see it on their page, the table card and
// the slideshow. A fresh server's demo event carries a name the server made up
// (`name_chosen` false): then this form stands first on the dashboard, asks for a name and
// takes the focus; once a name is saved it is one row of the settings. The admin's page has its
// own (admin-event-view.js).

import { h } from './util.js';
import { t } from './i18n.js';
import { showError } from './messages.js';

/** The server's rule for event names (400 `invalid_request` otherwise). */
export const MAX_EVENT_NAME = 120;

/** Whether `value` can be an event's name (1–120 characters once trimmed), before it is sent. */
export function nameFits(value) {
  const n = [...value.trim()].length;
  return n >= 1 && n <= MAX_EVENT_NAME;
}

export class EventNameForm {
  /**
   * @param {object} o
   * @param {string} o.id the input's id (one per page)
   * @param {(name: string) => Promise<object>} o.save sends the name; resolves with the changed event
   */
  constructor({ id, save }) {
    this.save = save;
    this.event = null;
    this.heading = h('h2', { class: 'name-heading' });
    this.hint = h('p', { class: 'hint' });
    this.label = h('label', { for: id });
    this.input = h('input', { type: 'text', id, name: 'event_name', maxlength: MAX_EVENT_NAME, autocomplete: 'off', required: true });
    this.submit = h('button', { type: 'submit', class: 'secondary', 'data-action': 'save-name' });
    this.note = h('p', { class: 'note', role: 'status', 'data-testid': 'name-note' });
    this.form = h('form', { class: 'name-form', 'data-testid': 'name-form', novalidate: true }, this.heading, this.label, this.hint, h('div', { class: 'row' }, this.input, this.submit), this.note);
    this.form.addEventListener('submit', (e) => {
      e.preventDefault();
      this.send();
    });
  }

  async send() {
    const name = this.input.value.trim();
    this.note.classList.remove('error');
    if (!nameFits(name)) {
      this.note.textContent = t('name_rule', { max: MAX_EVENT_NAME });
      this.note.classList.add('error');
      this.input.focus();
      return;
    }
    this.submit.disabled = true;
    try {
      await this.save(name);
      this.note.textContent = t('name_saved');
    } catch (err) {
      showError(this.note, err);
      this.note.classList.add('error');
    } finally {
      this.submit.disabled = false;
    }
  }

  /** Shows `event`'s name; asks for one while the server's made-up name stands. */
  render(event) {
    const asking = event.name_chosen === false;
    const was = this.event;
    this.event = event;
    this.form.classList.toggle('asking', asking);
    this.form.dataset.asking = String(asking);
    this.heading.textContent = t('name_ask_title');
    this.heading.hidden = !asking;
    this.hint.textContent = t(asking ? 'name_ask_hint' : 'name_hint');
    this.label.textContent = t('event_name');
    this.submit.textContent = t(asking ? 'name_ask_save' : 'save');
    // The server's made-up name is not offered as the answer; a chosen one is there to edit.
    if (document.activeElement !== this.input && (!was || was.name !== event.name || was.name_chosen !== event.name_chosen)) this.input.value = asking ? '' : event.name;
    this.input.placeholder = asking ? t('name_placeholder') : '';
  }
}
