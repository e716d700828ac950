// The organiser's page for one event: log in with the event's password, show the QR code of
// the join link, open or close uploads, set the guests' quota, moderate (hide, delete),
// download everything as a ZIP, and run the full-screen live slideshow (slideshow.js).

import { h, api, ApiError } from './util.js';
import { t, onLangChange } from './i18n.js';
import { Gallery } from './gallery.js';
import { Slideshow } from './slideshow.js';
import { errorText } from './messages.js';

const MB = 1024 * 1024;

export async function organiserPage({ slug, event, main, messages }) {
  let current = event;
  const loginSection = h('section', { class: 'card login', hidden: true });
  const dashboard = h('section', { class: 'dashboard', hidden: true });
  main.replaceChildren(loginSection, dashboard);

  // ---- login ------------------------------------------------------------------------
  const password = h('input', { name: 'password', id: 'password', type: 'password', required: true, autocomplete: 'current-password' });
  const loginError = h('p', { class: 'error', role: 'alert', hidden: true });
  const loginLabel = h('label', { for: 'password' });
  const loginButton = h('button', { type: 'submit' });
  const loginForm = h('form', { class: 'login-form' }, loginLabel, password, loginButton, loginError);
  loginSection.append(loginForm);
  loginForm.addEventListener('submit', async (e) => {
    e.preventDefault();
    loginButton.disabled = true;
    try {
      await api('POST', `/api/v1/events/${encodeURIComponent(slug)}/organiser-sessions`, { password: password.value });
      password.value = '';
      current = await api('GET', `/api/v1/events/${encodeURIComponent(slug)}`);
      showDashboard();
    } catch (err) {
      loginError.textContent = errorText(err);
      loginError.hidden = false;
    } finally {
      loginButton.disabled = false;
    }
  });

  // ---- dashboard --------------------------------------------------------------------
  const qr = h('img', { class: 'qr', alt: 'QR', width: 240, height: 240 });
  const joinLink = h('a', { class: 'join-link', 'data-testid': 'join-link' });
  const openBox = h('input', { type: 'checkbox', name: 'uploads_open', id: 'uploads_open', class: 'switch' });
  const quotaInput = h('input', { type: 'number', name: 'guest_quota_mb', id: 'guest_quota_mb', min: 0, step: 1, inputmode: 'numeric' });
  const settingsNote = h('p', { class: 'note', role: 'status' });
  const zip = h('a', { class: 'button', href: `/api/v1/events/${encodeURIComponent(slug)}/export.zip`, download: `${slug}.zip`, 'data-action': 'download' });
  const showButton = h('button', { type: 'button', 'data-action': 'slideshow' });
  const count = h('p', { class: 'muted' });
  const galleryRoot = h('div', {});
  const labels = {
    link: h('h2', {}),
    hint: h('p', { class: 'hint' }),
    open: h('label', { for: 'uploads_open' }),
    quota: h('label', { for: 'guest_quota_mb' }),
    save: h('button', { type: 'submit', class: 'secondary' }),
    gallery: h('h2', {}),
    who: h('span', {}),
    logout: h('button', { type: 'button', class: 'secondary small', 'data-action': 'logout' }),
  };
  // Logging out ends the session on the server too; the reload shows the login again.
  labels.logout.addEventListener('click', async () => {
    labels.logout.disabled = true;
    try {
      await api('DELETE', `/api/v1/events/${encodeURIComponent(slug)}/organiser-sessions/current`);
    } catch (err) {
      // Already ended or expired: the page shows the login either way.
      if (!(err instanceof ApiError) || err.status !== 401) {
        settingsNote.textContent = errorText(err);
        labels.logout.disabled = false;
        return;
      }
    }
    location.reload();
  });
  const quotaForm = h('form', { class: 'quota-form' }, labels.quota, h('div', { class: 'row' }, quotaInput, labels.save));
  quotaForm.addEventListener('submit', async (e) => {
    e.preventDefault();
    await change({ guest_quota_bytes: Math.round(Number(quotaInput.value) * MB) });
  });
  openBox.addEventListener('change', () => change({ uploads_open: openBox.checked }));

  dashboard.append(
    h('p', { class: 'muted who-row' }, labels.who, labels.logout),
    h('div', { class: 'card share' }, labels.link, qr, joinLink, labels.hint),
    h('div', { class: 'card settings' }, h('div', { class: 'row switch-row' }, openBox, labels.open), quotaForm, settingsNote),
    h('div', { class: 'actions' }, zip, showButton),
    labels.gallery,
    count,
    galleryRoot,
  );

  async function change(patch) {
    settingsNote.textContent = '';
    try {
      current = await api('PATCH', `/api/v1/events/${encodeURIComponent(slug)}`, patch);
      settingsNote.textContent = t('saved');
    } catch (err) {
      settingsNote.textContent = errorText(err);
    }
    renderDashboard();
  }

  function renderLogin() {
    loginLabel.textContent = t('password');
    loginButton.textContent = t('login');
  }

  function renderDashboard() {
    labels.who.textContent = t('logout_hint');
    labels.logout.textContent = t('logout');
    labels.link.textContent = t('join_link');
    labels.hint.textContent = t('qr_hint');
    labels.open.textContent = t('uploads_open');
    labels.quota.textContent = t('quota_per_guest');
    labels.save.textContent = t('save');
    labels.gallery.textContent = t('gallery');
    zip.textContent = t('download_all');
    showButton.textContent = t('slideshow');
    if (current.join_url) {
      joinLink.href = current.join_url;
      joinLink.textContent = current.join_url;
    }
    openBox.checked = current.uploads_open !== false;
    if (document.activeElement !== quotaInput) quotaInput.value = String(Math.round((current.guest_quota_bytes ?? 0) / MB));
    if (gallery) {
      const n = gallery.order.length;
      count.textContent = n === 1 && gallery.exhausted ? t('photos_count_one') : t('photos_count', { n }) + (gallery.exhausted ? '' : '+');
    }
  }

  let gallery = null;
  function showDashboard() {
    loginSection.hidden = true;
    dashboard.hidden = false;
    qr.src = `/e/${encodeURIComponent(slug)}/qr.svg`;
    if (!gallery) {
      gallery = new Gallery({ slug, root: galleryRoot, viewer: () => ({ organiser: true }), messages });
      gallery.onChange(() => renderDashboard());
      gallery.loadMore();
      gallery.live((u) => slideshow.arrived(u));
    }
    renderDashboard();
  }

  const slideshow = new Slideshow({ gallery: () => gallery, event: () => current, slug });
  showButton.addEventListener('click', () => slideshow.start());

  onLangChange(() => {
    renderLogin();
    renderDashboard();
  });
  renderLogin();

  // Organisers see the join token in the event; guests and strangers do not.
  if (current.join_token) showDashboard();
  else {
    loginSection.hidden = false;
    password.focus();
  }
}
