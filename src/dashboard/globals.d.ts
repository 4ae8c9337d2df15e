// What the page's other script (uPlot's IIFE build, loaded before dashboard.js) puts in the global scope.
declare const uPlot: typeof import('uplot');
