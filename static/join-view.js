// Joining an event: the guest gives a name; the join token from the QR code's link (kept on
// this device) proves they were invited. No account, no password. Without the token (the link
// was cut short, or typed from memory) no form is shown — it could not succeed — only what is
// missing and how to get it.

import { h, api, remember, remembered } from './util.js';
import { t, onLangChange } from './i18n.js';
import { showError } from './messages.js';

const NAME_KEY = 'confetti.name';

/** Where this device keeps an event's join token. */
export const joinKey = (slug) => `confetti.join.${slug}`;

export class JoinView {
  /**
   * @param {object} o
   * @param {string} o.slug the event
   * @param {HTMLElement} o.section where the form goes
   * @param {() => Promise<void>} o.onJoined called once the server knows the guest
   */
  constructor({ slug, section, onJoined }) {
    this.slug = slug;
    this.section = section;
    this.name = h('input', { name: 'display_name', id: 'display_name', type: 'text', maxlength: 60, required: true, autocomplete: 'nickname', enterkeyhint: 'go' });
    this.name.value = remembered(NAME_KEY) || '';
    this.error = h('p', { class: 'error', role: 'alert', hidden: true });
    this.label = h('label', { for: 'display_name' });
    this.hint = h('p', { class: 'hint' });
    this.button = h('button', { type: 'submit' });
    const form = h('form', { class: 'join-form', 'data-testid': 'join' }, this.label, this.name, this.hint, this.button, this.error);
    this.form = form;
    this.incomplete = h('p', { class: 'incomplete', role: 'alert', 'data-testid': 'link-incomplete', hidden: true });
    section.append(this.incomplete, form);
    form.addEventListener('submit', (e) => {
      e.preventDefault();
      this.join(onJoined);
    });
    onLangChange(() => this.render());
    this.render();
  }

  render() {
    this.label.textContent = t('your_name');
    this.hint.textContent = t('join_hint');
    this.button.textContent = t('join');
    this.incomplete.textContent = t('link_incomplete');
  }

  /** Shows the form, with why it is shown again (the session ended) if there is a reason. */
  show(message) {
    this.section.hidden = false;
    const token = Boolean(remembered(joinKey(this.slug)));
    this.form.hidden = !token;
    this.incomplete.hidden = token;
    this.section.classList.toggle('link-incomplete', !token);
    if (!token) return;
    this.say(message);
    this.name.focus();
  }

  say(message) {
    this.error.textContent = message || '';
    this.error.hidden = !message;
  }

  async join(onJoined) {
    const token = remembered(joinKey(this.slug));
    if (!token) return this.show();
    this.button.disabled = true;
    try {
      const r = await api('POST', `/api/v1/events/${encodeURIComponent(this.slug)}/guests`, { join_token: token, display_name: this.name.value.trim() });
      remember(NAME_KEY, r.guest.display_name);
      await onJoined();
    } catch (err) {
      showError(this.error, err);
      this.error.hidden = false;
    } finally {
      this.button.disabled = false;
    }
  }
}
