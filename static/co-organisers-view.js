// The organiser's card of co-organisers: a login of their own for a helper ("Best man"), with
// a label and a password; the list of them, each with Revoke (asked in place; their sessions
// end at once). Only the event's own password manages co-organisers: for a co-organiser the
// server answers 403 and the card stays hidden.

import { h, api, ApiError } from './util.js';
import { t, onLangChange } from './i18n.js';
import { confirmInPlace, showError } from './messages.js';

export class CoOrganisersCard {
  /** @param {{slug: string, messages: import('./messages.js').MessageArea}} o */
  constructor({ slug, messages }) {
    this.slug = slug;
    this.messages = messages;
    this.items = [];
    this.path = `/api/v1/events/${encodeURIComponent(slug)}/co-organisers`;
    this.title = h('h2', {});
    this.hint = h('p', { class: 'hint' });
    this.labelInput = h('input', { name: 'co_label', id: 'co_label', type: 'text', maxlength: 60, required: true, autocomplete: 'off' });
    this.passwordInput = h('input', { name: 'co_password', id: 'co_password', type: 'password', required: true, autocomplete: 'new-password' });
    this.labelLabel = h('label', { for: 'co_label' });
    this.passwordLabel = h('label', { for: 'co_password' });
    this.addButton = h('button', { type: 'submit', class: 'secondary' });
    this.note = h('p', { class: 'note', role: 'status' });
    this.form = h('form', { class: 'co-form' }, this.labelLabel, this.labelInput, this.passwordLabel, this.passwordInput, this.addButton, this.note);
    this.list = h('ul', { class: 'people-list', 'data-testid': 'co-organisers' });
    this.empty = h('p', { class: 'muted' });
    this.el = h('div', { class: 'card co-organisers', hidden: true }, this.title, this.hint, this.list, this.empty, this.form);
    this.form.addEventListener('submit', (e) => this.add(e));
    onLangChange(() => this.render());
  }

  /** Loads the list; a co-organiser (403) does not see the card at all. */
  async refresh() {
    try {
      this.items = (await api('GET', this.path)).items || [];
      this.el.hidden = false;
    } catch (err) {
      this.el.hidden = true;
      if (!(err instanceof ApiError && err.status === 403)) console.warn('could not load the co-organisers', err);
    }
    this.render();
  }

  async add(e) {
    e.preventDefault();
    this.addButton.disabled = true;
    this.note.textContent = '';
    try {
      const added = await api('POST', this.path, { label: this.labelInput.value, password: this.passwordInput.value });
      this.labelInput.value = '';
      this.passwordInput.value = '';
      this.note.textContent = t('co_added', { label: added.label });
      await this.refresh();
    } catch (err) {
      showError(this.note, err);
    } finally {
      this.addButton.disabled = false;
    }
  }

  render() {
    this.title.textContent = t('co_organisers');
    this.hint.textContent = t('co_organisers_hint');
    this.labelLabel.textContent = t('co_label');
    this.passwordLabel.textContent = t('co_password');
    this.addButton.textContent = t('co_add');
    this.empty.textContent = t('co_none');
    this.empty.hidden = this.items.length > 0;
    this.list.replaceChildren(...this.items.map((c) => this.row(c)));
  }

  row(c) {
    const revoke = h('button', { type: 'button', class: 'secondary small', 'data-action': 'revoke' }, t('co_revoke'));
    revoke.addEventListener('click', async () => {
      if (!(await confirmInPlace(revoke, { question: t('co_revoke_question', { label: c.label }), confirm: t('co_revoke') }))) return;
      revoke.disabled = true;
      try {
        await api('DELETE', `${this.path}/${encodeURIComponent(c.id)}`);
        this.messages.note(() => t('co_revoked', { label: c.label }));
      } catch (err) {
        // Revoked already (another tab): the list shows it gone either way.
        if (!(err instanceof ApiError && err.status === 404)) this.messages.refusal(err);
      }
      await this.refresh();
    });
    return h('li', { class: 'person', 'data-co-organiser-id': c.id }, h('span', { class: 'person-name' }, c.label), revoke);
  }
}
