// The controls that change a photo for everyone: its organiser hides it (or shows it again) or
// approves it (the review gate), and its uploader or organiser deletes it; the organiser also
// moderates many at once (`moderateMany`, the review view and the selection). Deleting is asked in
// place first; the organiser may undo it for a few seconds after ("Photo deleted · Undo"); a
// refusal is said in the page's message area.

import { h, api, ApiError, STATUS } from './util.js';
import { t } from './i18n.js';
import { confirmInPlace } from './messages.js';

/**
 * The organiser's Hide / Show button.
 * @param {object} upload the photo as the server last described it
 * @param {{messages: import('./messages.js').MessageArea, onChanged: (upload) => void}} o
 */
export function hideButton(upload, o) {
  const hide = upload.status !== STATUS.HIDDEN;
  return changeButton(upload, { hidden: hide }, { action: 'hide', label: hide ? t('hide') : t('unhide'), cls: 'secondary' }, o);
}

/**
 * The organiser's Approve button of a photo waiting for review: everyone sees it from then on.
 * @param {object} upload
 * @param {{messages: import('./messages.js').MessageArea, onChanged: (upload) => void}} o
 */
export function approveButton(upload, o) {
  return changeButton(upload, { approved: true }, { action: 'approve', label: t('approve'), cls: '' }, o);
}

/** A button that changes the photo (PATCH) and hands on the photo as the server answered. */
function changeButton(upload, change, { action, label, cls }, { messages, onChanged }) {
  const button = h('button', { type: 'button', class: cls, 'data-action': action }, label);
  button.addEventListener('click', async () => {
    button.disabled = true;
    try {
      onChanged(await api('PATCH', `/api/v1/uploads/${upload.id}`, change));
    } catch (err) {
      messages.refusal(err);
    } finally {
      button.disabled = false;
    }
  });
  return button;
}

/**
 * The Delete button of one's own photo (or, for the organiser, any photo): asks in place, then
 * deletes. A photo already gone counts as deleted.
 * @param {object} upload
 * @param {{messages: import('./messages.js').MessageArea, onDeleted: () => void}} o
 */
export function deleteButton(upload, { messages, onDeleted }) {
  const button = h('button', { type: 'button', class: 'danger', 'data-action': 'delete' }, t('delete'));
  button.addEventListener('click', async () => {
    if (!(await confirmInPlace(button, { question: t('confirm_delete'), confirm: t('delete') }))) return;
    button.disabled = true;
    try {
      await api('DELETE', `/api/v1/uploads/${upload.id}`);
    } catch (err) {
      if (!(err instanceof ApiError && err.status === 404)) {
        messages.refusal(err);
        button.disabled = false;
        button.focus();
        return;
      }
    }
    onDeleted();
  });
  return button;
}

/** How long the organiser is offered to undo a delete (the server keeps the photo longer). */
export const UNDO_MS = 10_000;

/**
 * "Photo deleted · Undo", for the organiser: the note carries an Undo button for `UNDO_MS`;
 * undoing restores the photo on the server and hands it back.
 * @param {object} upload the deleted photo
 * @param {{messages: import('./messages.js').MessageArea, onRestored: (upload) => void}} o
 */
export function offerUndo(upload, { messages, onRestored }) {
  messages.note(() => t('deleted'), {
    ms: UNDO_MS,
    action: {
      name: 'undo',
      label: () => t('undo'),
      run: async () => {
        try {
          onRestored(await api('POST', `/api/v1/uploads/${upload.id}/restore`));
          messages.note(() => t('restored'));
        } catch (err) {
          messages.refusal(err);
        }
      },
    },
  });
}

/** The most photos one moderation request names (the server's bound). */
export const MAX_SELECTION = 200;

/**
 * Moderates several photos of the event at once: `approve`, `reject` (with `reason`), `hide`,
 * `show` or `delete`, in one request per 200 photos (each with its own Idempotency-Key, kept
 * across its retries by `api`). Resolves with the server's answer per photo,
 * `{id, result, upload}`.
 * @param {string} slug
 * @param {'approve'|'reject'|'hide'|'show'|'delete'} action
 * @param {string[]} ids
 * @param {string} [reason]
 */
export async function moderateMany(slug, action, ids, reason) {
  const items = [];
  for (let i = 0; i < ids.length; i += MAX_SELECTION) {
    const body = { action, upload_ids: ids.slice(i, i + MAX_SELECTION) };
    if (action === 'reject' && reason) body.reason = reason;
    const answer = await api('POST', `/api/v1/events/${encodeURIComponent(slug)}/uploads/moderation`, body);
    items.push(...answer.items);
  }
  return items;
}
