// A settings card folded to its heading: the welcome text, the host modes and the helpers'
// logins are set once, before the party, so on the dashboard they stand as one line each and
// the gallery is not pushed far below them. The heading opens and closes its card (a tap, or
// Enter / Space); this device remembers the choice per card.

import { remembered, remember } from './util.js';

/**
 * Makes `card`'s first heading its toggle, folded unless the organiser left it open here.
 * @param {HTMLElement} card
 * @param {string} name remembers the choice under this name
 */
export function foldable(card, name) {
  const heading = card.querySelector('h2');
  if (!heading) return;
  const key = `confetti.fold.${name}`;
  card.classList.add('fold');
  heading.classList.add('fold-head');
  heading.tabIndex = 0;
  heading.setAttribute('role', 'button');
  const show = (open) => {
    card.classList.toggle('folded', !open);
    heading.setAttribute('aria-expanded', String(open));
  };
  show(remembered(key) === 'open');
  const toggle = () => {
    const open = card.classList.contains('folded');
    show(open);
    remember(key, open ? 'open' : 'folded');
  };
  heading.addEventListener('click', toggle);
  heading.addEventListener('keydown', (e) => {
    if (e.key !== 'Enter' && e.key !== ' ') return;
    e.preventDefault();
    toggle();
  });
}
