/* global document, setInterval */
// Review console: live countdown to an approval's expiry (served from this file; CSP script-src 'self').
// Every <time data-countdown datetime="…"> shows the time left; at zero it reads "Expired" and the
// buttons marked data-expires-with-countdown are disabled (the server refuses them after expiry anyway).
(function () {
  'use strict';
  var nodes = document.querySelectorAll('time[data-countdown]');
  function pad(n) {
    return n < 10 ? '0' + n : String(n);
  }
  function tick() {
    var now = Date.now();
    nodes.forEach(function (node) {
      var left = Math.floor((Date.parse(node.getAttribute('datetime')) - now) / 1000);
      if (left <= 0) {
        node.textContent = 'Expired';
        node.classList.add('expired');
        document.querySelectorAll('[data-expires-with-countdown]').forEach(function (b) {
          b.disabled = true;
        });
        return;
      }
      var h = Math.floor(left / 3600);
      var m = Math.floor((left % 3600) / 60);
      var s = left % 60;
      node.textContent = (h > 0 ? h + ':' + pad(m) : String(m)) + ':' + pad(s) + ' left';
    });
  }
  if (nodes.length > 0) {
    tick();
    setInterval(tick, 1000);
  }
})();
