// A settings card folded to its heading: the welcome text, the host modes and the helpers'
// logins are set once, before the party, so on the dashboard they stand as one line each and
// the gallery is not pushed far below them. A button inside the heading opens and closes its
// card; this device remembers the choice per card.

import { h, remembered, remember } from './util.js';

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
  const toggle = h('button', { type: 'button', class: 'fold-toggle' });
  // The card writes its heading's words as text; they move into the button, whenever written.
  const wrap = () => {
    if (heading.childNodes.length === 1 && heading.firstChild === toggle) return;
    toggle.textContent = heading.textContent;
    heading.replaceChildren(toggle);
  };
  new MutationObserver(wrap).observe(heading, { childList: true, characterData: true, subtree: true });
  wrap();
  const show = (open) => {
    card.classList.toggle('folded', !open);
    toggle.setAttribute('aria-expanded', String(open));
  };
  show(remembered(key) === 'open');
  toggle.addEventListener('click', () => {
    const open = card.classList.contains('folded');
    show(open);
    remember(key, open ? 'open' : 'folded');
  });
}
