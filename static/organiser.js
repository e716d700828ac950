// The organiser's page for one event: log in with the event's password, name the event (asked
// for first while a fresh server's demo event carries its made-up name), show the QR code of
// the join link (copy it, print a table card), open or close uploads, set the guests' quota (in
// photos, as guests read it), shape the guests' page (guest-page-card.js), set the host modes and
// approve waiting photos (host-modes-card.js), review them large with keys (review-view.js),
// moderate many at once (selection.js) or one in its lightbox (hide, delete with undo, block its
// sender, set as cover; each tile shows only who sent it), download the photos as a ZIP (one
// button, its choices in a menu), run the full-screen live slideshow (slideshow.js) or make a
// link that runs it on the venue's screen (screen-link-card.js), and give helpers a login
// (co-organisers-view.js).

import { h, api, ApiError, formatBytes, STATUS } from './util.js';
import { t, tIn, lang, onLangChange } from './i18n.js';
import { Gallery } from './gallery.js';
import { Slideshow } from './slideshow.js';
import { showError } from './messages.js';
import { GuestPageCard } from './guest-page-card.js';
import { HostModesCard, PendingList } from './host-modes-card.js';
import { foldable } from './fold.js';

import { TYPICAL_PHOTO_BYTES } from './quota-view.js';
import { blockButton, BlockedGuestsCard } from './blocks-view.js';
import { CoOrganisersCard } from './co-organisers-view.js';
import { EventNameForm } from './event-name-view.js';
import { ScreenLinkCard } from './screen-link-card.js';
import { GuestbookCard } from './guestbook-card.js';
import { ReviewView } from './review-view.js';
import { Selection } from './selection.js';

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
      showError(loginError, err);
      loginError.hidden = false;
    } finally {
      loginButton.disabled = false;
    }
  });

  // ---- dashboard --------------------------------------------------------------------
  const qr = h('img', { class: 'qr', alt: 'QR', width: 240, height: 240 });
  const joinLink = h('a', { class: 'join-link', 'data-testid': 'join-link' });
  const openBox = h('input', { type: 'checkbox', name: 'uploads_open', id: 'uploads_open', class: 'switch' });
  // The quota in photos, as guests read theirs ("about 200 more photos"): a typical photo each.
  const quotaInput = h('input', { type: 'number', name: 'guest_quota_photos', id: 'guest_quota_photos', min: 0, step: 1, inputmode: 'numeric' });
  const settingsNote = h('p', { class: 'note', role: 'status' });
  const copyButton = h('button', { type: 'button', class: 'secondary', 'data-action': 'copy-link' });
  const copyFallback = h('input', { type: 'text', readonly: true, class: 'copy-fallback', 'data-testid': 'copy-fallback', hidden: true, 'aria-label': 'URL' });
  const printButton = h('button', { type: 'button', class: 'secondary', 'data-action': 'print-card' });
  const shareNote = h('p', { class: 'note', role: 'status' });
  const quotaShown = h('p', { class: 'hint', 'data-testid': 'quota-shown' });
  const exportUrl = `/api/v1/events/${encodeURIComponent(slug)}/export.zip`;
  // One download button; its choices (with the hidden, with the waiting photos) open beneath it.
  const zip = h('a', { class: 'button', href: exportUrl, download: `${slug}.zip`, 'data-action': 'download' });
  const zipHidden = h('a', { class: 'button secondary', href: `${exportUrl}?include_hidden=true`, download: `${slug}-all.zip`, 'data-action': 'download-with-hidden' });
  const hiddenNote = h('p', { class: 'hint', 'data-testid': 'hidden-note' });
  const zipPending = h('a', { class: 'button secondary', href: `${exportUrl}?include_pending=true`, download: `${slug}-with-waiting.zip`, 'data-action': 'download-with-pending', hidden: true });
  const downloadSummary = h('summary', { class: 'button secondary', 'data-action': 'download-menu' });
  const downloadMenu = h('details', { class: 'download-menu', 'data-testid': 'download-menu' }, downloadSummary, h('div', { class: 'download-choices' }, zip, zipHidden, zipPending, hiddenNote));
  const modesCard = new HostModesCard({ slug, onChanged: (changed) => {
    current = changed;
    renderDashboard();
  } });
  // Photos waiting for review, counted live in the tab's title and a badge at the top.
  const waitingBadge = h('button', { type: 'button', class: 'waiting-badge small', 'data-testid': 'waiting-badge', hidden: true });
  const pendingList = new PendingList({ slug, messages, onApproved: (u) => gallery?.upsert(u), onCount: () => renderTitle(), onReview: () => review.open(), onModerated: (items) => moderated(items) });
  const review = new ReviewView({ slug, waiting: () => [...pendingList.items.values()], onModerated: (items) => moderated(items) });
  waitingBadge.addEventListener('click', () => review.open());
  /** What the server answered per photo after a moderation: tiles and the waiting list follow. */
  function moderated(items) {
    for (const item of items) {
      if (item.upload) {
        gallery?.upsert(item.upload);
        pendingList.seen(item.upload);
      } else {
        gallery?.remove(item.id);
        pendingList.gone(item.id);
      }
    }
    renderDashboard();
  }
  // The table card is for paper only: the print style shows it and nothing else.
  const card = {
    name: h('h2', { class: 'table-card-name' }),
    qr: h('img', { class: 'table-card-qr', alt: 'QR', width: 300, height: 300 }),
    de: h('p', { class: 'table-card-line', lang: 'de' }),
    en: h('p', { class: 'table-card-line', lang: 'en' }),
    link: h('p', { class: 'table-card-link' }),
  };
  const tableCard = h('section', { class: 'table-card', 'data-testid': 'table-card', 'aria-hidden': 'true' }, card.name, card.qr, card.de, card.en, card.link);
  const showButton = h('button', { type: 'button', 'data-action': 'slideshow' });
  const count = h('p', { class: 'muted' });
  const galleryRoot = h('div', {});
  // The gallery's heading, its count and "Select"; the selection's bar follows the grid.
  const galleryHead = h('div', { class: 'gallery-head' });
  const selectBar = h('div', { hidden: true });
  let selection = null;
  const labels = {
    link: h('h2', {}),
    hint: h('p', { class: 'hint' }),
    open: h('label', { for: 'uploads_open' }),
    quota: h('label', { for: 'guest_quota_photos' }),
    save: h('button', { type: 'submit', class: 'secondary' }),
    gallery: h('h2', { class: 'gallery-title' }),
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
        showError(settingsNote, err);
        labels.logout.disabled = false;
        return;
      }
    }
    location.reload();
  });
  const quotaForm = h('form', { class: 'quota-form' }, labels.quota, h('div', { class: 'row' }, quotaInput, labels.save));
  quotaForm.addEventListener('submit', async (e) => {
    e.preventDefault();
    await change({ guest_quota_bytes: Math.round(Number(quotaInput.value)) * TYPICAL_PHOTO_BYTES });
  });
  openBox.addEventListener('change', () => change({ uploads_open: openBox.checked }));

  // The event's name: a row of the settings, or the first card while the server's made-up name stands.
  const nameForm = new EventNameForm({ id: 'event_name', save: async (name) => {
    current = await api('PATCH', `/api/v1/events/${encodeURIComponent(slug)}`, { name });
    renderTitle();
    renderDashboard();
    return current;
  } });
  const askName = h('div', { class: 'card ask-name', 'data-testid': 'ask-name', hidden: true });
  const settingsCard = h('div', { class: 'card settings' }, h('div', { class: 'row switch-row' }, openBox, labels.open), quotaForm, quotaShown, settingsNote);

  const screenCard = new ScreenLinkCard({ slug, onChanged: (changed) => {
    current = changed;
    renderDashboard();
  } });
  const pageCard = new GuestPageCard({ change, galleryRoot, gallery: () => gallery });
  // ---- people: co-organisers and blocked guests (co-organisers-view.js, blocks-view.js) ----
  const coOrganisers = new CoOrganisersCard({ slug, messages });
  // Their photos shown again: the gallery reads them afresh.
  const blockedGuests = new BlockedGuestsCard({ slug, messages, onUnblocked: (_, { shown }) => shown && gallery?.reload() });
  const guestbookCard = new GuestbookCard({ slug, messages });
  /** A guest was blocked: their photos are hidden now, so their tiles are read again. */
  function guestBlocked(standing) {
    blockedGuests.refresh();
    for (const u of gallery?.uploads.values() ?? []) if (u.guest?.id === standing.id) gallery.reread(u.id);
  }

  // Set once before the party: each folds to its heading, so the gallery stays near the top.
  foldable(pageCard.el, 'guest-page');
  foldable(modesCard.el, 'host-modes');
  foldable(coOrganisers.el, 'co-organisers');
  foldable(screenCard.el, 'screen-link');
  dashboard.append(
    h('p', { class: 'muted who-row' }, labels.who, labels.logout),
    waitingBadge,
    askName,
    h('div', { class: 'card share' }, labels.link, qr, joinLink, copyFallback, h('div', { class: 'share-actions' }, copyButton, printButton), shareNote, labels.hint),
    settingsCard,
    pageCard.el,
    modesCard.el,
    screenCard.el,
    coOrganisers.el,
    blockedGuests.el,
    h('div', { class: 'actions' }, downloadMenu, showButton),
    pendingList.el,
    guestbookCard.el,
    galleryHead,
    galleryRoot,
    selectBar,
    tableCard,
  );

  // Copying the join link: the clipboard where the browser allows it (a secure context), else
  // the link shown selected, for the organiser to copy by hand.
  copyButton.addEventListener('click', async () => {
    const url = current.join_url || '';
    try {
      if (!navigator.clipboard?.writeText) throw new Error('no clipboard');
      await navigator.clipboard.writeText(url);
      copyFallback.hidden = true;
      shareNote.textContent = t('link_copied');
    } catch {
      copyFallback.value = url;
      copyFallback.hidden = false;
      copyFallback.focus();
      copyFallback.select();
      shareNote.textContent = t('link_copy_by_hand');
    }
  });
  copyFallback.addEventListener('focus', () => copyFallback.select());
  printButton.addEventListener('click', () => window.print());
  quotaInput.addEventListener('input', () => renderQuotaShown());

  // Who sent each photo, over the foot of its tile (the gallery draws the tiles; a tile redrawn
  // gets it again). Blocking them and the other actions are in the lightbox and the selection.
  const names = new MutationObserver(() => nameTiles());
  names.observe(galleryRoot, { childList: true, subtree: true });
  function nameTiles() {
    for (const tile of galleryRoot.querySelectorAll('.tile[data-upload-id]')) {
      const name = gallery?.uploads.get(tile.dataset.uploadId)?.guest?.display_name ?? '';
      const shown = tile.querySelector(':scope > .tile-by');
      if (shown?.textContent === name) continue;
      if (shown) shown.textContent = name;
      else tile.append(h('p', { class: 'tile-by', 'data-testid': 'tile-by', 'aria-hidden': 'true' }, name));
    }
  }

  async function change(patch, note = settingsNote) {
    note.textContent = '';
    try {
      current = await api('PATCH', `/api/v1/events/${encodeURIComponent(slug)}`, patch);
      note.textContent = t('saved');
    } catch (err) {
      showError(note, err);
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
    labels.quota.textContent = t('quota_photos_per_guest');
    labels.save.textContent = t('save');
    labels.gallery.textContent = t('gallery');
    renderName();
    renderTitle();
    renderCard();
    renderQuotaShown();
    renderExport();
    modesCard.render(current);
    screenCard.render(current);
    pendingList.setGate(current.review_uploads);
    zipPending.textContent = t('download_with_pending');
    downloadSummary.textContent = t('download_menu');
    zipPending.hidden = pendingList.count === 0;
    // Waiting photos are left out of the plain download too.
    if (pendingList.count) zip.textContent = t('download_visible');
    copyButton.textContent = t('copy_link');
    printButton.textContent = t('print_card');
    showButton.textContent = t('slideshow');
    if (current.join_url) {
      joinLink.href = current.join_url;
      joinLink.textContent = current.join_url;
    }
    openBox.checked = current.uploads_open !== false;
    pageCard.render(current);
    if (document.activeElement !== quotaInput) quotaInput.value = String(Math.round((current.guest_quota_bytes ?? 0) / TYPICAL_PHOTO_BYTES));
    if (gallery) {
      const n = gallery.order.length;
      count.textContent = n === 1 && gallery.exhausted ? t('photos_count_one') : t('photos_count', { n }) + (gallery.exhausted ? '' : '+');
    }
  }

  function renderName() {
    const asking = current.name_chosen === false;
    const spot = asking ? askName : settingsCard;
    if (nameForm.form.parentElement !== spot) spot.prepend(nameForm.form);
    askName.hidden = !asking;
    nameForm.render(current);
  }

  /** The page's heading and tab title follow a new name; the title and the badge count the photos waiting. */
  function renderTitle() {
    const title = document.getElementById('event-name');
    if (title) title.textContent = current.name || '';
    const n = pendingList.count;
    const name = current.name ? `${current.name} · Confetti` : 'Confetti';
    document.title = n ? `(${n}) ${name}` : name;
    waitingBadge.hidden = n === 0;
    waitingBadge.dataset.count = String(n);
    waitingBadge.textContent = n === 1 ? t('waiting_badge_one') : t('waiting_badge', { n });
  }

  function renderCard() {
    card.name.textContent = current.name || '';
    card.de.textContent = tIn('de', 'card_scan');
    card.en.textContent = tIn('en', 'card_scan');
    card.link.textContent = current.join_url || '';
  }

  /** What the photos the organiser types come to in bytes ("≈ 1 GB per guest"). */
  function renderQuotaShown() {
    const photos = Number(quotaInput.value);
    const valid = quotaInput.value !== '' && Number.isFinite(photos) && photos >= 0;
    quotaShown.textContent = valid ? t('quota_photos_bytes', { size: formatBytes(Math.round(photos) * TYPICAL_PHOTO_BYTES, lang()), photo: formatBytes(TYPICAL_PHOTO_BYTES, lang()) }) : '';
  }

  /** Hidden photos stay out of the plain download; the page says how many, and offers both. */
  function renderExport() {
    const hidden = gallery ? [...gallery.uploads.values()].filter((u) => u.status === STATUS.HIDDEN).length : 0;
    const known = Boolean(gallery?.exhausted);
    zip.textContent = hidden ? t('download_visible') : t('download_all');
    zipHidden.textContent = t('download_with_hidden');
    const some = hidden > 0 || (gallery && !known);
    zipHidden.hidden = !some;
    hiddenNote.hidden = !some;
    hiddenNote.dataset.hidden = String(hidden);
    if (!hidden) hiddenNote.textContent = t('hidden_left_out_unknown');
    else if (!known) hiddenNote.textContent = t('hidden_left_out_at_least', { n: hidden });
    else hiddenNote.textContent = hidden === 1 ? t('hidden_left_out_one') : t('hidden_left_out', { n: hidden });
  }

  let gallery = null;
  function showDashboard() {
    loginSection.hidden = true;
    dashboard.hidden = false;
    qr.src = `/e/${encodeURIComponent(slug)}/qr.svg`;
    card.qr.src = qr.src;
    if (!gallery) {
      gallery = new Gallery({
        slug,
        root: galleryRoot,
        viewer: () => ({ organiser: true }),
        messages,
        onDeleted: (u) => u && pendingList.gone(u.id),
        // In the lightbox: block the photo's sender, make it the cover.
        extraActions: (u, lightboxMessages) => [
          u.guest?.id ? blockButton(u, { slug, messages: lightboxMessages, onBlocked: guestBlocked }) : null,
          pageCard.coverButton(u),
        ].filter(Boolean),
      });
      selection = new Selection({ slug, gallery, messages, waiting: () => [...pendingList.items.keys()], onModerated: (items) => moderated(items) });
      galleryHead.replaceChildren(labels.gallery, count, selection.toggleButton);
      selectBar.replaceWith(selection.bar);
      gallery.onChange(() => {
        for (const u of gallery.uploads.values()) pendingList.seen(u);
        renderDashboard();
        selection?.render();
      });
      gallery.loadMore();
      pendingList.load().then(() => renderDashboard());
      gallery.live((u) => {
        slideshow.arrived(u);
        pendingList.seen(u);
        if (u.review === 'pending' && u.status !== STATUS.HIDDEN) review.seen(u);
      });
      guestbookCard.start(gallery.source);
      coOrganisers.refresh();
      blockedGuests.refresh();
    }
    renderTitle();
    renderDashboard();
    if (current.name_chosen === false) nameForm.input.focus();
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
