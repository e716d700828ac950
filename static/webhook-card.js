// The admin's webhook card (admin.js): where the server POSTs when photos wait for review, the
// secret that signs each call (shown once, after saving), how the last call went, a test call
// and removing it. The calls themselves: docs/api.md, "The admin's webhook".

import { h, ApiError } from './util.js';
import { t, lang } from './i18n.js';
import { showError } from './messages.js';

export class WebhookCard {
  /** `call(method, path, body)`: an API call as the admin. */
  constructor({ call, messages }) {
    this.call = call;
    this.messages = messages;
    this.webhook = null;
    this.title = h('h2', {});
    this.hint = h('p', { class: 'hint' });
    this.state = h('p', { class: 'webhook-state', 'data-testid': 'webhook-state' });
    this.label = h('label', { for: 'webhook_url' });
    this.url = h('input', { type: 'url', name: 'webhook_url', id: 'webhook_url', maxlength: 2000, autocomplete: 'off', spellcheck: 'false', placeholder: 'https://…' });
    this.save = h('button', { type: 'submit' });
    this.test = h('button', { type: 'button', class: 'secondary', 'data-action': 'webhook-test' });
    this.remove = h('button', { type: 'button', class: 'secondary', 'data-action': 'webhook-remove' });
    this.error = h('p', { class: 'error', role: 'alert', hidden: true });
    this.secret = h('div', { class: 'webhook-secret', 'data-testid': 'webhook-secret', hidden: true });
    this.form = h(
      'form',
      { class: 'webhook-form', 'data-testid': 'webhook-form', novalidate: true },
      this.label, this.url, h('div', { class: 'webhook-actions' }, this.save, this.test, this.remove), this.error,
    );
    this.el = h('div', { class: 'card webhook-card', 'data-testid': 'webhook' }, this.title, this.hint, this.state, this.form, this.secret);
    this.form.addEventListener('submit', (e) => {
      e.preventDefault();
      this.submit();
    });
    this.test.addEventListener('click', () => this.sendTest());
    this.remove.addEventListener('click', () => this.removeWebhook());
    this.render();
  }

  /** Reads the webhook as the server has it. */
  async load() {
    try {
      this.webhook = await this.call('GET', '/api/v1/admin/webhook');
    } catch (err) {
      if (!(err instanceof ApiError && err.status === 404)) {
        if (err instanceof ApiError && (err.status === 401 || err.status === 403)) return;
        this.messages.refusal(err);
      }
      this.webhook = null;
    }
    if (this.webhook && document.activeElement !== this.url) this.url.value = this.webhook.url;
    this.render();
  }

  async submit() {
    this.error.hidden = true;
    const url = this.url.value.trim();
    if (!/^https?:\/\/\S+$/i.test(url)) {
      this.error.textContent = t('webhook_url_needed');
      this.error.hidden = false;
      this.url.focus();
      return;
    }
    await this.busy(async () => {
      const answer = await this.call('PUT', '/api/v1/admin/webhook', { url });
      this.webhook = answer;
      this.showSecret(answer.secret);
      this.messages.note(() => t('webhook_saved'));
    });
  }

  async sendTest() {
    await this.busy(async () => {
      const result = await this.call('POST', '/api/v1/admin/webhook/test');
      if (result.delivered) this.messages.note(() => t('webhook_test_ok', { status: result.status }));
      else this.messages.note(() => t('webhook_test_failed', { error: result.error ?? '' }));
      await this.load();
    });
  }

  async removeWebhook() {
    await this.busy(async () => {
      await this.call('DELETE', '/api/v1/admin/webhook');
      this.webhook = null;
      this.url.value = '';
      this.secret.hidden = true;
      this.messages.note(() => t('webhook_removed'));
    });
  }

  /** Runs `work` with the buttons off; a refusal shows under the form. */
  async busy(work) {
    this.error.hidden = true;
    for (const b of [this.save, this.test, this.remove]) b.disabled = true;
    try {
      await work();
    } catch (err) {
      if (!(err instanceof ApiError && err.status === 401)) {
        showError(this.error, err);
        this.error.hidden = false;
      }
    } finally {
      for (const b of [this.save, this.test, this.remove]) b.disabled = false;
      this.render();
    }
  }

  showSecret(secret) {
    this.secretValue = secret;
    this.secret.hidden = false;
    this.render();
    // To be copied now: it is not shown again.
    this.secret.scrollIntoView({ block: 'center' });
  }

  render() {
    this.title.textContent = t('webhook_title');
    this.hint.textContent = t('webhook_hint');
    this.label.textContent = t('webhook_url');
    this.save.textContent = t('webhook_save');
    this.test.textContent = t('webhook_test');
    this.remove.textContent = t('webhook_remove');
    this.test.hidden = this.remove.hidden = !this.webhook;
    if (this.secretValue) {
      this.secret.replaceChildren(
        h('p', {}, t('webhook_secret')),
        h('code', { 'data-testid': 'webhook-secret-value' }, this.secretValue),
      );
    }
    this.renderState();
  }

  renderState() {
    const w = this.webhook;
    const when = (at) => new Date(at).toLocaleString(lang(), { dateStyle: 'medium', timeStyle: 'short' });
    if (!w) {
      this.state.dataset.state = 'none';
      this.state.textContent = t('webhook_none');
      return;
    }
    const parts = [];
    if (!w.last_attempt_at) {
      this.state.dataset.state = 'idle';
      parts.push(t('webhook_no_calls'));
    } else if (w.last_error) {
      this.state.dataset.state = 'failed';
      parts.push(t('webhook_last_failed', { when: when(w.last_attempt_at), error: w.last_error }));
    } else {
      this.state.dataset.state = 'ok';
      parts.push(t('webhook_last_ok', { when: when(w.last_attempt_at), status: w.last_status }));
    }
    if (w.last_error && w.last_delivered_at) parts.push(t('webhook_last_delivered', { when: when(w.last_delivered_at) }));
    if (w.pending_deliveries > 0) parts.push(t('webhook_pending', { n: w.pending_deliveries }));
    this.state.textContent = parts.join(' · ');
  }
}
