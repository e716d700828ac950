// What the page tells the guest or organiser, in the page instead of the browser's alert() and
// confirm() boxes (which block the page, look foreign on a phone and cannot be translated):
// a message area — notes that pass (role=status) and refusals that stay until dismissed
// (role=alert) — and a question asked in place of the button that starts a final action.

import { h, ApiError } from './util.js';
import { t, has, onLangChange } from './i18n.js';

/** How long a passing note stays. Refusals stay until dismissed. */
const NOTE_MS = 6000;
/** More would cover the page on a phone: the oldest goes. */
const MAX_SHOWN = 3;

/**
 * Why an API call failed, in the page's language: the problem's code when the page has words
 * for it, the server's trouble for a 5xx, else a refusal named by its status. Never the
 * server's own sentence (English): that is the second line (`serverDetail`).
 */
export function errorText(err) {
  const code = err instanceof ApiError ? err.code : 'network';
  const key = `err_${code}`;
  const s = Math.ceil((err?.retryAfter ?? 0) / 1000) || err?.problem?.retry_after_s || '';
  if (has(key)) return t(key, { s });
  if (err?.status >= 500) return t('err_server', { status: err.status });
  if (err instanceof ApiError && err.status) return t('err_refused_status', { status: err.status });
  return t('err_network');
}

/** The server's own words for a refusal ("The server says: …"), or '' when it gave none. */
export function serverDetail(err) {
  const detail = err instanceof ApiError && err.status ? err.problem?.detail : '';
  return detail ? t('server_says', { detail }) : '';
}

/**
 * Puts a refusal into `el`: the page's words, and the server's under them, smaller (in
 * English, as the server wrote them; marked so a screen reader reads them as English).
 */
export function showError(el, err) {
  const detail = serverDetail(err);
  el.replaceChildren(errorText(err), ...(detail ? [h('span', { class: 'server-detail', lang: 'en' }, detail)] : []));
}

/**
 * A place for messages: its element goes where they should appear (fixed at the bottom of
 * the screen, see style.css). A page has one; the lightbox, a modal dialog that makes the page
 * behind it inert, has its own.
 */
export class MessageArea {
  constructor() {
    // Live regions announce what is put into them, so they exist before any message does.
    this.notes = h('div', { class: 'messages-notes', role: 'status' });
    this.alerts = h('div', { class: 'messages-alerts', role: 'alert' });
    this.el = h('div', { class: 'messages', 'data-testid': 'messages' }, this.alerts, this.notes);
    this.shown = [];
    onLangChange(() => {
      for (const m of this.shown) m.render();
    });
  }

  /**
   * A note that passes by itself (role=status): something worked, or is worth knowing. With
   * `action` ({name, label, run}) it carries a button that runs it and takes the note away
   * ("Photo deleted · Undo"); `ms` how long it stays.
   */
  note(words, { action, ms } = {}) {
    return this.show(words, 'note', { action, ms });
  }

  /** A refusal or failure (role=alert): stays until dismissed or the same words come again. */
  error(words) {
    return this.show(words, 'error');
  }

  /** A refused or failed API call: the page's words for its code, the server's as a second line. */
  refusal(err) {
    return this.show(() => errorText(err), 'error', { detail: () => serverDetail(err) });
  }

  /** Takes every message away (the view they were about has closed). */
  clear() {
    for (const m of [...this.shown]) m.close();
  }

  /**
   * Shows `words` (a string, or a function giving the string in the current language, so the
   * message follows a language switch). Returns a function that takes the message away.
   */
  show(words, kind, { action, ms = NOTE_MS, detail = '' } = {}) {
    const text = typeof words === 'function' ? words : () => words;
    const body = h('span', { class: 'message-text' });
    const second = detail ? h('span', { class: 'server-detail', lang: 'en' }) : null;
    const dismiss = h('button', { type: 'button', class: 'message-dismiss', 'data-action': 'dismiss' }, h('span', { 'aria-hidden': 'true' }, '✕'));
    const act = action ? h('button', { type: 'button', class: 'message-action', 'data-action': action.name }) : null;
    const el = h('div', { class: `message ${kind}`, 'data-kind': kind }, body, act, dismiss);
    let timer = null;
    const m = {
      el,
      text,
      render() {
        if (second) second.textContent = typeof detail === 'function' ? detail() : detail;
        body.replaceChildren(text(), ...(second?.textContent ? [second] : []));
        if (act) act.textContent = action.label();
        dismiss.setAttribute('aria-label', t('dismiss'));
      },
      close: () => {
        clearTimeout(timer);
        el.remove();
        this.shown = this.shown.filter((x) => x !== m);
      },
    };
    m.render();
    // The same words again (a second tap on a refused button): one message, not a stack.
    for (const old of this.shown.filter((x) => x.text() === text())) old.close();
    while (this.shown.length >= MAX_SHOWN) this.shown[0].close();
    dismiss.addEventListener('click', m.close);
    act?.addEventListener('click', () => {
      m.close();
      action.run();
    });
    (kind === 'error' ? this.alerts : this.notes).append(el);
    this.shown.push(m);
    if (kind !== 'error') timer = setTimeout(m.close, ms);
    return m.close;
  }
}

let questions = 0;

/**
 * Asks before a final action, in place of the button that starts it: the question, Cancel and
 * the action's own button. Resolves true when confirmed, false when cancelled (also by Escape).
 * Focus starts on Cancel, the safe choice, and goes back to the button when cancelled.
 *
 * @param {HTMLElement} trigger the button the question replaces while it is asked
 * @param {{question: string, confirm: string}} words the question and the confirming button's label
 */
export function confirmInPlace(trigger, { question, confirm }) {
  return new Promise((resolve) => {
    questions += 1;
    const id = `confirm-question-${questions}`;
    const cancelButton = h('button', { type: 'button', class: 'secondary', 'data-action': 'cancel' }, t('cancel'));
    const confirmButton = h('button', { type: 'button', class: 'danger', 'data-action': 'confirm' }, confirm);
    const group = h(
      'div',
      { class: 'confirm', role: 'group', 'aria-labelledby': id, 'data-testid': 'confirm' },
      h('p', { class: 'confirm-question', id }, question),
      h('div', { class: 'confirm-buttons' }, cancelButton, confirmButton),
    );
    const answer = (yes) => {
      group.replaceWith(trigger);
      if (!yes) trigger.focus();
      resolve(yes);
    };
    cancelButton.addEventListener('click', () => answer(false));
    confirmButton.addEventListener('click', () => answer(true));
    group.addEventListener('keydown', (e) => {
      if (e.key !== 'Escape') return;
      // Escape takes the question back, not the dialog around it.
      e.preventDefault();
      e.stopPropagation();
      answer(false);
    });
    trigger.replaceWith(group);
    cancelButton.focus();
  });
}
