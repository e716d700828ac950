// One event on the admin's page: its name, slug, creation time, whether uploads are open, its
// guests, photos and storage; and what the admin does to it — show the join link and QR code
// again (copy the link, open the organiser page), rename it, open or close uploads, set a new organiser
// password (which ends every organiser session), delete the event once its name is typed.

import { h, formatBytes } from './util.js';
import { t, lang } from './i18n.js';
import { showError } from './messages.js';
import { EventNameForm } from './event-name-view.js';

/** The server's rule for organiser passwords (422 `weak_password` otherwise). */
const MIN_PASSWORD = 8;
const MAX_PASSWORD_BYTES = 72;

/** What the page says about a password while it is typed: the rule, and whether it is met. */
export function passwordRule(value) {
  const chars = [...value].length;
  const bytes = new TextEncoder().encode(value).length;
  if (bytes > MAX_PASSWORD_BYTES) return { ok: false, text: t('admin_password_too_long', { max: MAX_PASSWORD_BYTES }) };
  if (chars < MIN_PASSWORD) return { ok: false, text: t('admin_password_rule', { min: MIN_PASSWORD, n: chars }) };
  return { ok: true, text: t('admin_password_ok', { min: MIN_PASSWORD }) };
}

/**
 * The join link, its QR code (fetched with the admin's token: the code holds the join token,
 * so the server gives it to the organiser and the admin only), a copy button, and the
 * organiser page's link.
 */
export class SharePanel {
  constructor({ event, token }) {
    this.event = event;
    this.token = token;
    this.objectUrl = null;
    this.qr = h('img', { class: 'qr', alt: 'QR', width: 240, height: 240, 'data-testid': 'qr' });
    this.label = h('p', { class: 'muted share-label' });
    this.link = h('a', { class: 'join-link', 'data-testid': 'join-link', target: '_blank', rel: 'noopener' });
    this.copy = h('button', { type: 'button', class: 'secondary', 'data-action': 'copy-link' });
    this.fallback = h('input', { type: 'text', readonly: true, class: 'copy-fallback', 'data-testid': 'copy-fallback', hidden: true, 'aria-label': 'URL' });
    this.organiser = h('a', { class: 'button secondary', 'data-testid': 'organiser-link', target: '_blank', rel: 'noopener' });
    this.note = h('p', { class: 'note', role: 'status' });
    this.el = h(
      'div',
      { class: 'share admin-share', 'data-testid': 'share' },
      this.label, this.qr, this.link, this.fallback,
      h('div', { class: 'share-actions' }, this.copy, this.organiser),
      this.note,
    );
    this.copy.addEventListener('click', () => this.copyLink());
    this.fallback.addEventListener('focus', () => this.fallback.select());
    this.render();
  }

  /** Loads the QR code the first time the panel is shown. */
  async show() {
    if (this.objectUrl) return;
    try {
      const response = await fetch(`/e/${encodeURIComponent(this.event.slug)}/qr.svg`, { headers: { Authorization: `Bearer ${this.token}` } });
      if (!response.ok) throw new Error(`HTTP ${response.status}`);
      this.objectUrl = URL.createObjectURL(await response.blob());
      this.qr.src = this.objectUrl;
    } catch {
      this.note.textContent = t('admin_qr_failed');
    }
  }

  async copyLink() {
    const url = this.event.join_url || '';
    try {
      if (!navigator.clipboard?.writeText) throw new Error('no clipboard');
      await navigator.clipboard.writeText(url);
      this.fallback.hidden = true;
      this.note.textContent = t('link_copied');
    } catch {
      // No clipboard here (plain http on a LAN address): the link, selected, to copy by hand.
      this.fallback.value = url;
      this.fallback.hidden = false;
      this.fallback.focus();
      this.fallback.select();
      this.note.textContent = t('link_copy_by_hand');
    }
  }

  render() {
    this.label.textContent = t('join_link');
    this.link.href = this.event.join_url;
    this.link.textContent = this.event.join_url;
    this.copy.textContent = t('copy_link');
    this.organiser.href = `/e/${encodeURIComponent(this.event.slug)}/organiser`;
    this.organiser.textContent = t('admin_organiser_page');
  }

  destroy() {
    if (this.objectUrl) URL.revokeObjectURL(this.objectUrl);
    this.objectUrl = null;
  }
}

export class EventCard {
  /**
   * @param {object} o
   * @param {object} o.event the listed event (with `guest_count` and `upload_count`)
   * @param {Function} o.call the admin's API call: (method, path, body) => answer
   * @param {Function} o.onDeleted called with the slug once the server deleted it
   * @param {Function} o.onChanged called after a change, to read the list again
   */
  constructor({ event, token, call, messages, onDeleted, onChanged }) {
    Object.assign(this, { event, call, messages, onDeleted, onChanged });
    this.share = new SharePanel({ event, token });
    this.share.el.hidden = true;
    const slug = event.slug;
    const id = (name) => `${name}-${slug}`;
    this.name = h('h3', { class: 'admin-event-name' });
    this.status = h('span', { class: 'status-badge', 'data-testid': 'status' });
    this.slug = h('p', { class: 'muted admin-slug' }, slug);
    this.facts = h('p', { class: 'admin-facts', 'data-testid': 'facts' });
    this.shareButton = h('button', { type: 'button', class: 'secondary', 'data-action': 'share', 'aria-expanded': 'false' });
    this.open = h('input', { type: 'checkbox', class: 'switch', name: 'uploads_open', id: id('open') });
    this.openLabel = h('label', { for: id('open') });
    this.passwordButton = h('button', { type: 'button', class: 'secondary', 'data-action': 'reset-password', 'aria-expanded': 'false' });
    this.deleteButton = h('button', { type: 'button', class: 'danger', 'data-action': 'delete-event' });
    this.note = h('p', { class: 'note', role: 'status' });
    this.password = {
      label: h('label', { for: id('new-password') }),
      input: h('input', { type: 'text', name: 'new_password', id: id('new-password'), autocomplete: 'off', spellcheck: 'false' }),
      rule: h('p', { class: 'hint', 'data-testid': 'password-rule' }),
      hint: h('p', { class: 'hint' }),
      submit: h('button', { type: 'submit' }),
      error: h('p', { class: 'error', role: 'alert', hidden: true }),
    };
    const p = this.password;
    this.passwordForm = h('form', { class: 'password-form', 'data-testid': 'password-form', novalidate: true, hidden: true }, p.label, p.input, p.rule, p.hint, p.submit, p.error);
    this.renameButton = h('button', { type: 'button', class: 'secondary', 'data-action': 'rename', 'aria-expanded': 'false' });
    this.rename = new EventNameForm({ id: id('name'), save: (name) => this.setName(name) });
    this.rename.form.classList.add('rename-form');
    this.rename.form.hidden = true;
    this.actions = h('div', { class: 'admin-actions' }, this.shareButton, this.renameButton, this.passwordButton, this.deleteButton);
    this.el = h(
      'article',
      { class: 'card admin-event', 'data-slug': slug },
      h('div', { class: 'admin-event-head' }, this.name, this.status),
      this.slug,
      this.facts,
      h('div', { class: 'row switch-row' }, this.open, this.openLabel),
      this.actions,
      this.share.el,
      this.rename.form,
      this.passwordForm,
      this.note,
    );

    this.shareButton.addEventListener('click', () => this.toggle(this.share.el, this.shareButton, () => this.share.show()));
    this.renameButton.addEventListener('click', () => this.toggle(this.rename.form, this.renameButton, () => this.rename.input.focus()));
    this.passwordButton.addEventListener('click', () => this.toggle(this.passwordForm, this.passwordButton, () => p.input.focus()));
    this.open.addEventListener('change', () => this.setOpen(this.open.checked));
    p.input.addEventListener('input', () => this.renderRule());
    this.passwordForm.addEventListener('submit', (e) => {
      e.preventDefault();
      this.setPassword();
    });
    this.deleteButton.addEventListener('click', () => this.confirmDelete());
    this.render();
  }

  toggle(panel, button, then) {
    panel.hidden = !panel.hidden;
    button.setAttribute('aria-expanded', String(!panel.hidden));
    if (!panel.hidden) then();
  }

  update(event) {
    this.event = { ...event };
    this.share.event = this.event;
    this.render();
  }

  async setOpen(open) {
    this.note.textContent = '';
    this.open.disabled = true;
    try {
      const changed = await this.call('PATCH', `/api/v1/events/${encodeURIComponent(this.event.slug)}`, { uploads_open: open });
      this.event = { ...this.event, uploads_open: changed.uploads_open };
      this.note.textContent = t(changed.uploads_open ? 'admin_opened' : 'admin_closed');
    } catch (err) {
      showError(this.note, err);
    } finally {
      this.open.disabled = false;
      this.render();
    }
  }

  /** Renames the event (its slug, and so every link, stays); the list is read again after. */
  async setName(name) {
    const changed = await this.call('PATCH', `/api/v1/events/${encodeURIComponent(this.event.slug)}`, { name });
    this.event = { ...this.event, name: changed.name, name_chosen: changed.name_chosen };
    this.rename.form.hidden = true;
    this.renameButton.setAttribute('aria-expanded', 'false');
    this.note.textContent = t('admin_renamed', { name: changed.name });
    this.render();
    this.onChanged();
    return changed;
  }

  async setPassword() {
    const p = this.password;
    p.error.hidden = true;
    const rule = passwordRule(p.input.value);
    if (!rule.ok) {
      p.error.textContent = rule.text;
      p.error.hidden = false;
      p.input.focus();
      return;
    }
    p.submit.disabled = true;
    try {
      await this.call('POST', `/api/v1/events/${encodeURIComponent(this.event.slug)}/organiser-password`, { password: p.input.value });
      p.input.value = '';
      this.passwordForm.hidden = true;
      this.passwordButton.setAttribute('aria-expanded', 'false');
      this.note.textContent = t('admin_password_set');
    } catch (err) {
      showError(p.error, err);
      p.error.hidden = false;
    } finally {
      p.submit.disabled = false;
      this.renderRule();
    }
  }

  /** Asks in place of the delete button: the event's name must be typed before it goes. */
  confirmDelete() {
    const name = this.event.name;
    const typed = h('input', { type: 'text', name: 'confirm_name', autocomplete: 'off', spellcheck: 'false', 'aria-label': t('admin_type_name') });
    const cancel = h('button', { type: 'button', class: 'secondary', 'data-action': 'cancel' }, t('cancel'));
    const confirm = h('button', { type: 'button', class: 'danger', 'data-action': 'confirm', disabled: true }, t('admin_delete_confirm'));
    const error = h('p', { class: 'error', role: 'alert', hidden: true });
    const photos = this.event.upload_count ?? 0;
    const group = h(
      'div',
      { class: 'confirm admin-confirm', role: 'group', 'data-testid': 'confirm' },
      h('p', { class: 'confirm-question' }, t('admin_delete_question', { name })),
      h('p', { class: 'hint' }, t(photos === 0 ? 'admin_delete_photos_none' : photos === 1 ? 'admin_delete_photos_one' : 'admin_delete_photos', { n: photos })),
      h('label', {}, t('admin_type_name')),
      typed,
      h('div', { class: 'confirm-buttons' }, cancel, confirm),
      error,
    );
    const back = () => {
      group.replaceWith(this.actions);
      this.deleteButton.focus();
    };
    typed.addEventListener('input', () => {
      confirm.disabled = typed.value.trim() !== name.trim();
    });
    group.addEventListener('keydown', (e) => {
      if (e.key === 'Escape') {
        e.preventDefault();
        back();
      }
    });
    cancel.addEventListener('click', back);
    confirm.addEventListener('click', async () => {
      if (typed.value.trim() !== name.trim()) return;
      confirm.disabled = true;
      cancel.disabled = true;
      try {
        await this.call('DELETE', `/api/v1/events/${encodeURIComponent(this.event.slug)}`);
        this.messages.note(() => t('admin_deleted', { name }));
        this.onDeleted(this.event.slug);
      } catch (err) {
        showError(error, err);
        error.hidden = false;
        cancel.disabled = false;
        confirm.disabled = false;
        if (err?.code === 'event_not_found') this.onChanged();
      }
    });
    this.actions.replaceWith(group);
    typed.focus();
  }

  renderRule() {
    const rule = passwordRule(this.password.input.value);
    this.password.rule.textContent = rule.text;
    this.password.rule.dataset.ok = String(rule.ok);
  }

  render() {
    const e = this.event;
    const when = new Date(e.created_at).toLocaleString(lang(), { dateStyle: 'medium', timeStyle: 'short' });
    this.name.textContent = e.name;
    this.status.textContent = t(e.uploads_open ? 'admin_open' : 'admin_closed_badge');
    this.status.dataset.open = String(Boolean(e.uploads_open));
    const guests = e.guest_count === 1 ? t('admin_guests_one') : t('admin_guests', { n: e.guest_count ?? 0 });
    const photos = e.upload_count === 1 ? t('photos_count_one') : t('photos_count', { n: e.upload_count ?? 0 });
    this.facts.textContent = `${t('admin_created_at', { when })} · ${guests} · ${photos} · ${formatBytes(e.used_bytes, lang())}`;
    this.facts.dataset.guests = String(e.guest_count ?? 0);
    this.facts.dataset.photos = String(e.upload_count ?? 0);
    this.open.checked = Boolean(e.uploads_open);
    this.openLabel.textContent = t('uploads_open');
    this.shareButton.textContent = t('admin_show_link');
    this.renameButton.textContent = t('admin_rename');
    // Here it is always an edit: the admin's card does not ask as the organiser's dashboard does.
    this.rename.render({ ...e, name_chosen: true });
    this.passwordButton.textContent = t('admin_new_password');
    this.deleteButton.textContent = t('admin_delete');
    const p = this.password;
    p.label.textContent = t('admin_new_password');
    p.hint.textContent = t('admin_new_password_hint');
    p.submit.textContent = t('admin_set_password');
    this.renderRule();
    this.share.render();
  }

  destroy() {
    this.share.destroy();
  }
}
