// The theme the person chose on this browser (system, light or dark), applied before the page is
// drawn so it never flashes the other one. app.js has the switch; "system" leaves it to the OS.
(function () {
  'use strict';
  try {
    const theme = JSON.parse(localStorage.getItem('hookwire.theme') || '"system"');
    if (theme === 'light' || theme === 'dark') document.documentElement.dataset.theme = theme;
  } catch (_) { /* storage off: the OS decides */ }
})();
