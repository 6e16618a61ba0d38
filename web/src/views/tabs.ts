// The view tabs (WAI-ARIA tab pattern).
import { emit, on } from '../bus';

// WAI-ARIA tabs: one tab in the tab order (roving tabindex), arrow keys,
// Home and End move between tabs and select them.
const tabs = [...document.querySelectorAll<HTMLButtonElement>('[role=tab]')];
export function selectTab(name: string, focus = false): void {
  for (const tab of tabs) {
    const on = tab.id === `tab-${name}`;
    tab.setAttribute('aria-selected', String(on));
    tab.tabIndex = on ? 0 : -1;
    document.getElementById(tab.getAttribute('aria-controls')!)!.hidden = !on;
    if (on && focus) tab.focus();
  }
  emit('tab-shown', name);
}
on('select-tab', (name) => selectTab(name));
for (const tab of tabs) {
  tab.addEventListener('click', () => selectTab(tab.id.replace(/^tab-/, '')));
  tab.addEventListener('keydown', (e) => {
    const i = tabs.indexOf(tab);
    const next = e.key === 'ArrowRight' ? (i + 1) % tabs.length : e.key === 'ArrowLeft' ? (i - 1 + tabs.length) % tabs.length
      : e.key === 'Home' ? 0 : e.key === 'End' ? tabs.length - 1 : -1;
    if (next < 0) return;
    e.preventDefault();
    selectTab(tabs[next].id.replace(/^tab-/, ''), true);
  });
}

