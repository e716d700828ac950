// The guest's page for one event: join with a name, choose photos, watch each one's state,
// the quota, "my photos", and the gallery.

import { h, api, ApiError, formatBytes } from './util.js';
import { t, lang, onLangChange } from './i18n.js';
import { UploadQueue } from './queue.js';
import { Gallery } from './gallery.js';

const NAME_KEY = 'confetti.name';
const joinKey = (slug) => `confetti.join.${slug}`;

function remembered(key) {
  try {
    return localStorage.getItem(key);
  } catch {
    return null;
  }
}
function remember(key, value) {
  try {
    localStorage.setItem(key, value);
  } catch {
    // Private mode: the cookie still keeps the guest joined.
  }
}

/** The server's limits and capabilities; remembered for pages opened while offline. */
async function serverInfo() {
  try {
    const info = await api('GET', '/api/v1/info');
    remember('confetti.info', JSON.stringify(info));
    return info;
  } catch {
    try {
      return JSON.parse(remembered('confetti.info')) || {};
    } catch {
      return {};
    }
  }
}

export async function guestPage({ slug, event, main }) {
  const params = new URLSearchParams(location.search);
  const tokenFromLink = params.get('join');
  if (tokenFromLink) {
    remember(joinKey(slug), tokenFromLink);
    // The token stays on this device, not in the address bar (or a screenshot of it).
    history.replaceState(null, '', location.pathname);
  }

  const info = await serverInfo();
  const caps = info.capabilities || ['client_upload_id', 'upload_preflight'];
  let me = null;

  const joinSection = h('section', { class: 'card join', hidden: true });
  const uploadSection = h('section', { class: 'uploader', hidden: true });
  const gallerySection = h('section', { class: 'gallery-section', hidden: true });
  main.replaceChildren(joinSection, uploadSection, gallerySection);

  // ---- the queue, restored before anything else so nothing waits unseen --------------
  const queueList = h('ul', { class: 'queue', 'aria-live': 'polite' });
  const views = new Map();
  const queue = new UploadQueue({
    slug,
    limits: { max_upload_bytes: info.limits?.max_upload_bytes, preflight: caps.includes('upload_preflight') },
    onChange: (item) => renderItem(item),
    onDone: (item) => {
      refreshMe();
      if (item.upload && gallery) gallery.upsert(item.upload);
    },
    onUnauthenticated: () => showJoin(t('err_unauthenticated')),
  });

  function itemMessage(item) {
    if (item.state === 'done') return item.already ? t('already') : '';
    if (item.state === 'queued' && navigator.onLine === false) return t('retry_online');
    if (item.state !== 'failed') return '';
    const p = item.problem || {};
    const code = item.last_error;
    let text;
    switch (code) {
      case 'quota_exceeded':
        text = t('err_quota_exceeded', { left: formatBytes(p.remaining_bytes, lang()), total: formatBytes(p.quota_bytes, lang()), size: formatBytes(item.size, lang()) });
        break;
      case 'file_too_large':
        text = t('err_file_too_large', { max: formatBytes(p.limit_bytes ?? info.limits?.max_upload_bytes, lang()) });
        break;
      case 'image_too_large':
        text = t('err_image_too_large', { px: Math.round((p.pixels ?? 0) / 1e6), max: Math.round((p.limit_pixels ?? info.limits?.max_image_pixels ?? 0) / 1e6) });
        break;
      case 'network':
        text = t('err_network');
        break;
      default:
        if (code && code.startsWith('http_') && (p.status ?? 0) >= 500) text = t('err_server', { status: p.status });
        else if (code && t(`err_${code}`) !== `err_${code}`) text = t(`err_${code}`);
        else if (p.status >= 500) text = t('err_server', { status: p.status });
        else text = t('err_generic', { detail: p.detail || code });
    }
    if (!item.final) {
      const s = Math.max(0, Math.ceil((item.next_at - Date.now()) / 1000));
      text += ' ' + (navigator.onLine === false ? t('retry_online') : t('retry_in', { s }));
    }
    return text;
  }

  function renderItem(item) {
    let v = views.get(item.client_upload_id);
    if (!v) {
      const preview = h('img', { class: 'q-thumb', alt: '' });
      if (item.blob) {
        preview.src = URL.createObjectURL(item.blob);
        preview.addEventListener('load', () => URL.revokeObjectURL(preview.src), { once: true });
      }
      v = {
        li: h('li', { class: 'q-item' }),
        name: h('span', { class: 'q-name' }),
        state: h('span', { class: 'q-state' }),
        bar: h('progress', { class: 'q-progress', max: 1, value: 0 }),
        msg: h('p', { class: 'q-msg' }),
        retry: h('button', { type: 'button', class: 'q-retry', 'data-action': 'retry', onclick: () => queue.retry(item.client_upload_id) }),
        discard: h('button', {
          type: 'button',
          class: 'q-discard',
          'data-action': 'discard',
          onclick: async () => {
            await queue.discard(item.client_upload_id);
            views.get(item.client_upload_id)?.li.remove();
            views.delete(item.client_upload_id);
          },
        }, '✕'),
      };
      v.li.append(preview, h('div', { class: 'q-body' }, h('div', { class: 'q-line' }, v.name, v.state), v.bar, v.msg), h('div', { class: 'q-actions' }, v.retry, v.discard));
      views.set(item.client_upload_id, v);
      queueList.prepend(v.li);
    }
    v.li.dataset.clientUploadId = item.client_upload_id;
    v.li.dataset.uploadState = item.state;
    v.li.dataset.final = item.final ? 'true' : 'false';
    if (item.last_error) v.li.dataset.error = item.last_error;
    else delete v.li.dataset.error;
    v.name.textContent = item.name;
    v.state.textContent = item.state === 'done' && item.already ? t('already') : t(`state_${item.state}`);
    v.bar.value = item.state === 'done' ? 1 : item.progress || 0;
    v.bar.hidden = item.state !== 'uploading';
    if (item.state === 'uploading' && !item.progress) v.bar.removeAttribute('value');
    const msg = item.state === 'done' ? '' : itemMessage(item);
    v.msg.textContent = msg;
    v.msg.hidden = !msg;
    v.retry.textContent = t('retry');
    v.retry.hidden = item.state !== 'failed';
    v.retry.disabled = item.state !== 'failed';
    // Only a photo the server refused for good may be dropped from the queue.
    v.discard.hidden = !(item.state === 'failed' && item.final);
    v.discard.setAttribute('aria-label', t('discard'));
    // A failed item that is not retried: the retry button is the only way on.
    if (item.state === 'failed' && item.final) v.li.classList.add('final');
    else v.li.classList.remove('final');
  }

  // Countdowns of items waiting for their next attempt.
  setInterval(() => {
    for (const item of queue.items.values()) if (item.state === 'failed' && !item.final) renderItem(item);
  }, 1000);

  // ---- quota ----------------------------------------------------------------------
  const quotaText = h('span', { class: 'quota-text', 'data-testid': 'quota' });
  const quotaBar = h('progress', { class: 'quota-bar', max: 1, value: 0 });
  const hello = h('p', { class: 'hello' });
  const closedBanner = h('p', { class: 'banner warn' }, t('uploads_closed_banner'));
  closedBanner.hidden = event.uploads_open !== false;
  const offlineBanner = h('p', { class: 'banner', hidden: true });

  function renderQuota() {
    if (!me) return;
    const left = Math.max(0, me.quota_bytes - me.used_bytes);
    quotaText.textContent = `${t('quota', { used: formatBytes(me.used_bytes, lang()), total: formatBytes(me.quota_bytes, lang()) })} · ${t('quota_left', { left: formatBytes(left, lang()) })}`;
    quotaText.dataset.usedBytes = String(me.used_bytes);
    quotaText.dataset.quotaBytes = String(me.quota_bytes);
    quotaBar.value = me.quota_bytes > 0 ? Math.min(1, me.used_bytes / me.quota_bytes) : 1;
    hello.textContent = t('hello', { name: me.display_name });
  }

  async function refreshMe() {
    try {
      me = await api('GET', '/api/v1/me');
      renderQuota();
    } catch (e) {
      if (e instanceof ApiError && e.status === 401) showJoin();
    }
  }

  // ---- uploading ------------------------------------------------------------------
  const input = h('input', { type: 'file', multiple: true, accept: 'image/*', class: 'file-input', id: 'photos' });
  input.addEventListener('change', async () => {
    const files = Array.from(input.files || []);
    if (!files.length) return;
    try {
      await queue.add(files);
    } finally {
      // The same photos may be chosen again later (the queue recognises them).
      input.value = '';
    }
  });
  const pick = h('label', { class: 'pick button', for: 'photos' }, h('span', { class: 'pick-icon', 'aria-hidden': 'true' }, '＋'), h('span', { 'data-i18n': 'choose_photos' }, t('choose_photos')));
  const hint = h('p', { class: 'hint', 'data-i18n': 'choose_hint' }, t('choose_hint'));
  uploadSection.append(
    hello,
    h('div', { class: 'quota' }, quotaBar, quotaText),
    closedBanner,
    offlineBanner,
    input,
    pick,
    hint,
    queueList,
  );

  function renderOnline() {
    offlineBanner.hidden = navigator.onLine !== false;
    offlineBanner.textContent = t('offline');
  }
  window.addEventListener('online', () => {
    renderOnline();
    for (const item of queue.items.values()) renderItem(item);
    queue.retryAll();
  });
  window.addEventListener('offline', () => {
    renderOnline();
    for (const item of queue.items.values()) renderItem(item);
  });
  // Timers sleep while a phone's screen is locked: look again when the page is back.
  document.addEventListener('visibilitychange', () => {
    if (document.visibilityState === 'visible') queue.pump();
  });
  renderOnline();

  // ---- gallery ----------------------------------------------------------------------
  const tabs = h('div', { class: 'tabs', role: 'tablist' });
  const allTab = h('button', { type: 'button', role: 'tab', 'aria-selected': 'true', 'data-filter': 'all' }, t('all_photos'));
  const mineTab = h('button', { type: 'button', role: 'tab', 'aria-selected': 'false', 'data-filter': 'mine' }, t('my_photos'));
  tabs.append(allTab, mineTab);
  const galleryRoot = h('div', {});
  gallerySection.append(h('h2', { 'data-i18n': 'gallery' }, t('gallery')), tabs, galleryRoot);
  let gallery = null;
  function selectTab(mine) {
    allTab.setAttribute('aria-selected', String(!mine));
    mineTab.setAttribute('aria-selected', String(mine));
    gallery?.setFilterMine(mine);
  }
  allTab.addEventListener('click', () => selectTab(false));
  mineTab.addEventListener('click', () => selectTab(true));

  onLangChange(() => {
    renderQuota();
    renderOnline();
    allTab.textContent = t('all_photos');
    mineTab.textContent = t('my_photos');
    closedBanner.textContent = t('uploads_closed_banner');
    for (const item of queue.items.values()) renderItem(item);
    renderJoin();
  });

  // ---- joining ----------------------------------------------------------------------
  const nameInput = h('input', { name: 'display_name', id: 'display_name', type: 'text', maxlength: 60, required: true, autocomplete: 'nickname', enterkeyhint: 'go' });
  nameInput.value = remembered(NAME_KEY) || '';
  const joinError = h('p', { class: 'error', role: 'alert', hidden: true });
  const joinLabel = h('label', { for: 'display_name' });
  const joinHint = h('p', { class: 'hint' });
  const joinButton = h('button', { type: 'submit' });
  const joinForm = h('form', { class: 'join-form', 'data-testid': 'join' }, joinLabel, nameInput, joinHint, joinButton, joinError);
  joinSection.append(joinForm);
  function renderJoin() {
    joinLabel.textContent = t('your_name');
    joinHint.textContent = t('join_hint');
    joinButton.textContent = t('join');
  }
  renderJoin();

  function showJoin(message) {
    joinSection.hidden = false;
    uploadSection.hidden = true;
    gallerySection.hidden = true;
    if (!remembered(joinKey(slug))) message = t('need_join_link');
    joinError.textContent = message || '';
    joinError.hidden = !message;
    nameInput.focus();
  }

  joinForm.addEventListener('submit', async (e) => {
    e.preventDefault();
    const token = remembered(joinKey(slug));
    if (!token) {
      joinError.textContent = t('need_join_link');
      joinError.hidden = false;
      return;
    }
    joinButton.disabled = true;
    try {
      const r = await api('POST', `/api/v1/events/${encodeURIComponent(slug)}/guests`, { join_token: token, display_name: nameInput.value.trim() });
      remember(NAME_KEY, r.guest.display_name);
      await enter();
    } catch (err) {
      const key = err instanceof ApiError ? `err_${err.code}` : 'err_network';
      const s = err.problem?.retry_after_s ?? '';
      joinError.textContent = t(key) !== key ? t(key, { s }) : err.message;
      joinError.hidden = false;
    } finally {
      joinButton.disabled = false;
    }
  });

  async function enter() {
    await refreshMe();
    if (!me || me.event !== slug) return;
    joinSection.hidden = true;
    uploadSection.hidden = false;
    gallerySection.hidden = false;
    if (!gallery) {
      gallery = new Gallery({
        slug,
        root: galleryRoot,
        viewer: () => ({ guestId: me?.id }),
        onDeleted: (u) => {
          refreshMe();
          if (u) queue.forgetUpload(u.id);
        },
      });
      gallery.loadMore();
      gallery.live();
    }
    queue.start();
  }

  // Restore the queue first (it renders at once), then find out who we are.
  const restored = await queue.load();
  for (const item of restored) renderItem(item);
  try {
    me = await api('GET', '/api/v1/me');
  } catch (e) {
    me = null;
    if (!(e instanceof ApiError) || e.status !== 401) {
      // Offline on load: show the queue; it goes out when the connection is back.
      uploadSection.hidden = false;
      window.addEventListener('online', () => enter(), { once: true });
      return;
    }
  }
  if (me && me.event === slug) await enter();
  else showJoin();
}
