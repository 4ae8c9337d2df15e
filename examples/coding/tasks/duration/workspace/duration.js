'use strict';
// Durations like "90s", "5m" or "1h30m", in seconds.

const UNITS = { s: 1, m: 60, h: 3600 };

function parseDuration(text) {
  const m = /^(\d+)([smh])$/.exec(text.trim());
  if (!m) return NaN;
  return Number(m[1]) * UNITS[m[2]];
}

function formatDuration(seconds) {
  const h = Math.floor(seconds / 3600);
  const m = Math.floor((seconds % 3600) / 60);
  const s = seconds % 60;
  return `${h}h${m}m${s}s`;
}

module.exports = { parseDuration, formatDuration };
