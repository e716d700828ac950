// The instance admin's page (`/admin`): log in with the admin token (kept for this tab only,
// in sessionStorage, and sent as a bearer token), list the events with their counts, newest
// first, and create one; the last backup shows under the login line; the webhook that tells of photos
// waiting for review is set in webhook-card.js. Each event's card and what it offers (join link and QR code, uploads
// open or closed, a new organiser password, deleting the event) are in admin-event-view.js.

import { h, api, ApiError, formatBytes } from './util.js';
import { t, onLangChange, lang } from './i18n.js';
import { errorText, showError } from './messages.js';
import { EventCard, SharePanel, passwordRule } from './admin-event-view.js';
import { WebhookCard } from './webhook-card.js';

const TOKEN_KEY = 'confetti.admin_token';
const MB = 1024 * 1024;

function storedToken() {
  try {
    return sessionStorage.getItem(TOKEN_KEY);
  } catch {
    return null;
  }
}

function storeToken(token) {
  try {
    if (token) sessionStorage.setItem(TOKEN_KEY, token);
    else sessionStorage.removeItem(TOKEN_KEY);
  } catch {
    // Storage unavailable: the token lasts until the page is left.
  }
}

export async function adminPage({ main, title, messages }) {
  let token = storedToken();
  const cards = new Map();

  // ---- login ------------------------------------------------------------------------
  const tokenInput = h('input', { type: 'password', name: 'admin_token', id: 'admin_token', autocomplete: 'off', spellcheck: 'false' });
  const loginLabel = h('label', { for: 'admin_token' });
  const loginHint = h('p', { class: 'hint', 'data-testid': 'token-hint' });
  const loginButton = h('button', { type: 'submit' });
  const loginError = h('p', { class: 'error', role: 'alert', 'data-testid': 'login-error', hidden: true });
  const loginTitle = h('h2', {});
  const loginForm = h('form', { class: 'login-form', 'data-testid': 'admin-login', novalidate: true }, loginLabel, tokenInput, loginHint, loginButton, loginError);
  const loginSection = h('section', { class: 'card login', hidden: true }, loginTitle, loginForm);

  // ---- dashboard --------------------------------------------------------------------
  const who = h('span', {});
  const logout = h('button', { type: 'button', class: 'secondary small', 'data-action': 'logout' });
  const backupNote = h('p', { class: 'backup-note', 'data-testid': 'last-backup' });
  const create = {
    title: h('h2', {}),
    nameLabel: h('label', { for: 'event_name' }),
    name: h('input', { type: 'text', name: 'name', id: 'event_name', maxlength: 120, autocomplete: 'off' }),
    passwordLabel: h('label', { for: 'organiser_password' }),
    password: h('input', { type: 'text', name: 'organiser_password', id: 'organiser_password', autocomplete: 'off', spellcheck: 'false' }),
    rule: h('p', { class: 'hint', 'data-testid': 'password-rule' }),
    quotaLabel: h('label', { for: 'new_quota_mb' }),
    quota: h('input', { type: 'number', name: 'guest_quota_mb', id: 'new_quota_mb', min: 0, step: 1, inputmode: 'numeric' }),
    quotaHint: h('p', { class: 'hint' }),
    submit: h('button', { type: 'submit' }),
    error: h('p', { class: 'error', role: 'alert', hidden: true }),
    result: h('div', { class: 'created', 'data-testid': 'created', hidden: true }),
  };
  const createForm = h(
    'form',
    { class: 'create-form', 'data-testid': 'create-event', novalidate: true },
    create.nameLabel, create.name, create.passwordLabel, create.password, create.rule,
    create.quotaLabel, create.quota, create.quotaHint, create.submit, create.error,
  );
  const listTitle = h('h2', {});
  const listNote = h('p', { class: 'muted', 'data-testid': 'events-count' });
  const list = h('div', { class: 'admin-events', 'data-testid': 'events' });
  const dashboard = h(
    'section',
    { class: 'admin-dashboard', hidden: true },
    h('p', { class: 'muted who-row' }, who, logout),
    backupNote,
    h('div', { class: 'card' }, create.title, createForm, create.result),
    listTitle,
    listNote,
    list,
  );
  const webhook = new WebhookCard({ call: (method, path, body) => call(method, path, body), messages });
  dashboard.append(webhook.el);
  main.replaceChildren(loginSection, dashboard);

  let created = null;
  let listing = { items: [], truncated: false };

  loginForm.addEventListener('submit', async (e) => {
    e.preventDefault();
    const candidate = tokenInput.value.trim();
    if (!candidate) return;
    loginButton.disabled = true;
    try {
      listing = await api('GET', '/api/v1/events', undefined, { token: candidate });
      token = candidate;
      storeToken(token);
      tokenInput.value = '';
      loginError.hidden = true;
      showDashboard();
    } catch (err) {
      loginError.textContent = isRefusedToken(err) ? t('admin_wrong_token') : errorText(err);
      loginError.hidden = false;
    } finally {
      loginButton.disabled = false;
    }
  });

  logout.addEventListener('click', () => showLogin());

  create.password.addEventListener('input', () => renderRule());
  createForm.addEventListener('submit', async (e) => {
    e.preventDefault();
    create.error.hidden = true;
    const name = create.name.value.trim();
    const rule = passwordRule(create.password.value);
    if (!name || !rule.ok) {
      create.error.textContent = !name ? t('admin_name_needed') : rule.text;
      create.error.hidden = false;
      (!name ? create.name : create.password).focus();
      return;
    }
    const body = { name, organiser_password: create.password.value };
    if (create.quota.value !== '') body.guest_quota_bytes = Math.round(Number(create.quota.value) * MB);
    create.submit.disabled = true;
    try {
      const event = await call('POST', '/api/v1/events', body);
      createForm.reset();
      renderRule();
      showCreated(event);
      messages.note(() => t('admin_created', { name: event.name }));
      await refresh();
    } catch (err) {
      if (err instanceof ApiError && err.status === 401) return;
      showError(create.error, err);
      create.error.hidden = false;
    } finally {
      create.submit.disabled = false;
    }
  });

  /** An API call as the admin; a token the server no longer takes ends the session. */
  async function call(method, path, body) {
    try {
      return await api(method, path, body, { token });
    } catch (err) {
      if (isRefusedToken(err)) {
        showLogin();
        loginError.textContent = t('admin_wrong_token');
        loginError.hidden = false;
      }
      throw err;
    }
  }

  function showCreated(event) {
    created?.destroy();
    created = new SharePanel({ event, token });
    create.result.replaceChildren(h('h3', { 'data-testid': 'created-name' }, event.name), created.el);
    create.result.hidden = false;
    create.result.scrollIntoView({ block: 'start' });
    created.show();
  }

  async function refresh() {
    try {
      listing = await call('GET', '/api/v1/events');
    } catch (err) {
      if (!isRefusedToken(err)) messages.refusal(err);
      return;
    }
    renderList();
  }

  function renderList() {
    const seen = new Set();
    const order = [];
    for (const event of listing.items) {
      seen.add(event.slug);
      let card = cards.get(event.slug);
      if (card) card.update(event);
      else {
        card = new EventCard({ event, token, call, messages, onDeleted: (slug) => removeCard(slug), onChanged: () => refresh() });
        cards.set(event.slug, card);
      }
      order.push(card.el);
    }
    for (const [slug, card] of cards) if (!seen.has(slug)) removeCard(slug);
    list.replaceChildren(...order);
    renderCount();
    renderBackup();
  }

  /** When the last backup ran and what it holds; a warning when none ran or files were missing. */
  function renderBackup() {
    const b = listing.last_backup;
    backupNote.dataset.state = !b ? 'none' : b.missing_blobs > 0 ? 'missing' : 'ok';
    if (!b) {
      backupNote.textContent = t('admin_backup_none');
      return;
    }
    const when = new Date(b.finished_at).toLocaleString(lang(), { dateStyle: 'medium', timeStyle: 'short' });
    const photos = b.uploads === 1 ? t('photos_count_one') : t('photos_count', { n: b.uploads });
    const parts = [t('admin_backup_last', { when }), photos, formatBytes(b.bytes, lang()), t('admin_backup_copied', { n: b.copied_blobs })];
    if (!b.with_database) parts.push(t('admin_backup_photos_only'));
    if (b.missing_blobs > 0) parts.push(t('admin_backup_missing', { n: b.missing_blobs }));
    backupNote.textContent = parts.join(' · ');
  }

  function removeCard(slug) {
    const card = cards.get(slug);
    if (!card) return;
    card.destroy();
    card.el.remove();
    cards.delete(slug);
    listing.items = listing.items.filter((e) => e.slug !== slug);
    renderCount();
  }

  function renderCount() {
    const n = listing.items.length;
    if (!n) listNote.textContent = t('admin_no_events');
    else listNote.textContent = (n === 1 ? t('admin_events_one') : t('admin_events', { n })) + (listing.truncated ? ` ${t('admin_events_truncated')}` : '');
  }

  function renderRule() {
    const rule = passwordRule(create.password.value);
    create.rule.textContent = rule.text;
    create.rule.dataset.ok = String(rule.ok);
  }

  function render() {
    title.textContent = t('admin_title');
    document.title = `${t('admin_title')} · Confetti`;
    loginTitle.textContent = t('admin_login_title');
    loginLabel.textContent = t('admin_token');
    loginHint.textContent = t('admin_token_hint');
    loginButton.textContent = t('login');
    who.textContent = t('admin_logged_in');
    logout.textContent = t('logout');
    create.title.textContent = t('admin_create');
    create.nameLabel.textContent = t('admin_event_name');
    create.passwordLabel.textContent = t('admin_organiser_password');
    create.quotaLabel.textContent = t('admin_quota_mb');
    create.quota.placeholder = '1024';
    create.quotaHint.textContent = t('admin_quota_hint');
    create.submit.textContent = t('admin_create_button');
    listTitle.textContent = t('admin_events_title');
    renderRule();
    renderCount();
    renderBackup();
    for (const card of cards.values()) card.render();
    created?.render();
    webhook.render();
  }

  function showLogin() {
    token = null;
    storeToken(null);
    for (const slug of [...cards.keys()]) removeCard(slug);
    created?.destroy();
    created = null;
    create.result.hidden = true;
    dashboard.hidden = true;
    loginSection.hidden = false;
    loginError.hidden = true;
    tokenInput.focus();
  }

  function showDashboard() {
    loginSection.hidden = true;
    dashboard.hidden = false;
    renderList();
    webhook.load();
  }

  onLangChange(render);
  render();
  if (token) {
    try {
      listing = await api('GET', '/api/v1/events', undefined, { token });
      showDashboard();
      return;
    } catch (err) {
      showLogin();
      loginError.textContent = isRefusedToken(err) ? t('admin_wrong_token') : errorText(err);
      loginError.hidden = false;
      return;
    }
  }
  showLogin();
}

/** 401 (no such token) or 403 (a guest's or an organiser's token): not the admin's. */
function isRefusedToken(err) {
  return err instanceof ApiError && (err.status === 401 || err.status === 403);
}
