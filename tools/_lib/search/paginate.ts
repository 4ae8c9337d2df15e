// Long documents are read a page at a time so a tool output stays short (long outputs slow
// training and confuse the model). Pages end at line boundaries so a table row or sentence is
// never cut in two, unless a single line is longer than a page.

/** Splits `text` into pages of at most `pageChars` characters (every page non-empty; at least one page). */
export function paginate(text: string, pageChars: number): string[] {
  if (!(pageChars > 0)) throw new RangeError(`pageChars must be > 0, got ${pageChars}`);
  const pages: string[] = [];
  let current = '';
  const flush = (): void => {
    if (current.trim().length > 0) pages.push(current.replace(/\n+$/, ''));
    current = '';
  };
  for (const line of text.split('\n')) {
    const piece = line + '\n';
    if (current.length + piece.length > pageChars) flush();
    if (piece.length > pageChars) {
      // A line longer than a page: cut it at spaces where possible.
      let rest = line;
      while (rest.length > pageChars) {
        const cut = rest.lastIndexOf(' ', pageChars);
        const at = cut > 0 ? cut : pageChars;
        pages.push(rest.slice(0, at));
        rest = rest.slice(at).replace(/^ /, '');
      }
      current = rest + '\n';
      continue;
    }
    current += piece;
  }
  flush();
  return pages.length ? pages : [''];
}
