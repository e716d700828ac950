// Blocking a guest from the organiser's dashboard: a "Block" action in a photo's lightbox asks in
// place, naming the guest and how many photos they sent, then hides all of them and stops the
// guest's uploads, likes and comments; the card of blocked guests lists them with Unblock, and
// "Unblock and show their photos again", which shows again the photos the block hid (those the
// organiser hid or rejected by hand stay hidden).

import { h, api } from './util.js';
import { t, onLangChange } from './i18n.js';
import { confirmInPlace } from './messages.js';

const guestPath = (slug, id) => `/api/v1/events/${encodeURIComponent(slug)}/guests/${encodeURIComponent(id)}`;

/** The question asked before blocking `standing` (the guest as `GET …/guests/{id}` describes them). */
function blockQuestion(standing) {
  const name = standing.display_name;
  const n = standing.upload_count;
  if (n === 0) return t('block_question_none', { name });
  return n === 1 ? t('block_question_one', { name }) : t('block_question', { name, n });
}

/**
 * The "Block" button of a photo (in the organiser's lightbox).
 * @param {object} upload the tile's photo
 * @param {{slug: string, messages: import('./messages.js').MessageArea, onBlocked: (standing) => void}} o
 */
export function blockButton(upload, { slug, messages, onBlocked }) {
  const guest = upload.guest || {};
  const button = h('button', { type: 'button', class: 'secondary block-guest', 'data-action': 'block-guest', 'data-guest-id': guest.id || '' });
  const label = () => {
    button.textContent = t('block_short');
    button.setAttribute('aria-label', `${t('block_guest')}: ${guest.display_name ?? ''}`);
  };
  label();
  button.addEventListener('click', async () => {
    button.disabled = true;
    let standing;
    try {
      standing = await api('GET', guestPath(slug, guest.id));
    } catch (err) {
      messages.refusal(err);
      return;
    } finally {
      button.disabled = false;
    }
    if (!(await confirmInPlace(button, { question: blockQuestion(standing), confirm: t('block_confirm') }))) return;
    button.disabled = true;
    try {
      const blocked = await api('POST', `${guestPath(slug, guest.id)}/block`);
      messages.note(() => t('blocked_note', { name: blocked.display_name }));
      onBlocked(blocked);
    } catch (err) {
      messages.refusal(err);
    } finally {
      button.disabled = false;
    }
  });
  button.relabel = label;
  return button;
}

/** The card of blocked guests, each with Unblock. */
export class BlockedGuestsCard {
  /**
   * @param {{slug: string, messages: import('./messages.js').MessageArea, onUnblocked: (standing, o: {shown: boolean}) => void}} o
   *   `shown`: the photos the block hid are shown again
   */
  constructor({ slug, messages, onUnblocked }) {
    this.slug = slug;
    this.messages = messages;
    this.onUnblocked = onUnblocked;
    this.items = [];
    this.title = h('h2', {});
    this.hint = h('p', { class: 'hint' });
    this.list = h('ul', { class: 'people-list', 'data-testid': 'blocked-guests' });
    this.el = h('div', { class: 'card blocked-guests', hidden: true }, this.title, this.list, this.hint);
    onLangChange(() => this.render());
  }

  async refresh() {
    try {
      this.items = (await api('GET', `/api/v1/events/${encodeURIComponent(this.slug)}/blocked-guests`)).items || [];
    } catch (err) {
      console.warn('could not load the blocked guests', err);
    }
    this.render();
  }

  render() {
    this.title.textContent = t('blocked_guests');
    this.hint.textContent = t('blocked_hint');
    // Shown once someone is blocked: an empty card would only take room on a phone.
    this.el.hidden = this.items.length === 0;
    this.list.replaceChildren(...this.items.map((g) => this.row(g)));
  }

  row(g) {
    const unblock = h('button', { type: 'button', class: 'secondary small', 'data-action': 'unblock' }, t('unblock'));
    const andShow = h('button', { type: 'button', class: 'small', 'data-action': 'unblock-and-show' }, t('unblock_and_show'));
    const run = async (button, showPhotos) => {
      unblock.disabled = andShow.disabled = true;
      try {
        const after = await api('DELETE', `${guestPath(this.slug, g.id)}/block${showPhotos ? '?show_photos=true' : ''}`);
        this.messages.note(() => t('unblocked_note', { name: after.display_name }));
        this.onUnblocked(after, { shown: showPhotos });
        await this.refresh();
      } catch (err) {
        this.messages.refusal(err);
        unblock.disabled = andShow.disabled = false;
        button.focus();
      }
    };
    unblock.addEventListener('click', () => run(unblock, false));
    andShow.addEventListener('click', () => run(andShow, true));
    const photos = g.upload_count === 1 ? t('photos_count_one') : t('photos_count', { n: g.upload_count });
    return h('li', { class: 'person', 'data-guest-id': g.id }, h('span', { class: 'person-name' }, g.display_name, h('span', { class: 'muted' }, ` · ${photos}`)), h('span', { class: 'person-actions' }, andShow, unblock));
  }
}
