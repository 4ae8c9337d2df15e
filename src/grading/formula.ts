// `calculate_output` of a multi grader: a tiny arithmetic language parsed by hand, so a grader
// config can never run code (no eval, no Function).
//
//   expr    := term (('+' | '-') term)*
//   term    := unary (('*' | '/') unary)*
//   unary   := ('-' | '+') unary | power
//   power   := primary ('^' unary)?            right-associative: 2^3^2 = 2^(3^2) = 512
//   primary := number | name | name '(' expr (',' expr)* ')' | '(' expr ')'
//
// '^' binds tighter than unary minus, as in mathematics: -2^2 = -(2^2) = -4, while 2^-1 = 0.5.
// Functions: min, max (one or more arguments), abs, floor, ceil, exp, sqrt, log (natural log,
// one argument each). Positions in errors are 0-based character offsets into the formula.
import { errors } from '../errors.js';

export type FormulaNode =
  | { kind: 'num'; value: number; pos: number }
  | { kind: 'var'; name: string; pos: number }
  | { kind: 'neg'; arg: FormulaNode; pos: number }
  | { kind: 'bin'; op: '+' | '-' | '*' | '/' | '^'; left: FormulaNode; right: FormulaNode; pos: number }
  | { kind: 'call'; fn: string; args: FormulaNode[]; pos: number };

const UNARY: Record<string, (x: number) => number> = {
  abs: Math.abs,
  floor: Math.floor,
  ceil: Math.ceil,
  exp: Math.exp,
  sqrt: Math.sqrt,
  log: Math.log,
};
const VARIADIC: Record<string, (...xs: number[]) => number> = { min: Math.min, max: Math.max };

export const FORMULA_FUNCTIONS = [...Object.keys(VARIADIC), ...Object.keys(UNARY)];

interface Token {
  type: 'num' | 'name' | 'op' | 'end';
  text: string;
  pos: number;
}

function tokenize(src: string): Token[] {
  const tokens: Token[] = [];
  const re = /\s*(?:(\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?)|([A-Za-z_][A-Za-z0-9_]*)|([-+*/^(),]))/y;
  let i = 0;
  while (i < src.length) {
    re.lastIndex = i;
    const m = re.exec(src);
    if (!m) {
      const at = i + (src.slice(i).length - src.slice(i).trimStart().length);
      if (at >= src.length) break;
      throw errors.formula(`unexpected character "${src[at]}"`, at);
    }
    const text = m[1] ?? m[2] ?? m[3] ?? '';
    const pos = m.index + m[0].length - text.length;
    tokens.push({ type: m[1] !== undefined ? 'num' : m[2] !== undefined ? 'name' : 'op', text, pos });
    i = re.lastIndex;
  }
  tokens.push({ type: 'end', text: '', pos: src.length });
  return tokens;
}

class Parser {
  private i = 0;
  constructor(private readonly tokens: Token[]) {}

  private peek(): Token {
    return this.tokens[this.i] ?? { type: 'end', text: '', pos: 0 };
  }

  private next(): Token {
    const t = this.peek();
    this.i++;
    return t;
  }

  private isOp(text: string): boolean {
    const t = this.peek();
    return t.type === 'op' && t.text === text;
  }

  private expect(text: string, what: string): void {
    const t = this.peek();
    if (!this.isOp(text)) throw errors.formula(`expected ${what}, found ${describe(t)}`, t.pos);
    this.i++;
  }

  parse(): FormulaNode {
    const node = this.expr();
    const t = this.peek();
    if (t.type !== 'end') throw errors.formula(`unexpected ${describe(t)}`, t.pos);
    return node;
  }

  private expr(): FormulaNode {
    let left = this.term();
    while (this.isOp('+') || this.isOp('-')) {
      const op = this.next();
      left = { kind: 'bin', op: op.text as '+' | '-', left, right: this.term(), pos: op.pos };
    }
    return left;
  }

  private term(): FormulaNode {
    let left = this.unary();
    while (this.isOp('*') || this.isOp('/')) {
      const op = this.next();
      left = { kind: 'bin', op: op.text as '*' | '/', left, right: this.unary(), pos: op.pos };
    }
    return left;
  }

  private unary(): FormulaNode {
    if (this.isOp('-')) {
      const op = this.next();
      return { kind: 'neg', arg: this.unary(), pos: op.pos };
    }
    if (this.isOp('+')) {
      this.next();
      return this.unary();
    }
    return this.power();
  }

  private power(): FormulaNode {
    const base = this.primary();
    if (!this.isOp('^')) return base;
    const op = this.next();
    return { kind: 'bin', op: '^', left: base, right: this.unary(), pos: op.pos };
  }

  private primary(): FormulaNode {
    const t = this.next();
    if (t.type === 'num') return { kind: 'num', value: Number(t.text), pos: t.pos };
    if (t.type === 'name') {
      if (!this.isOp('(')) {
        if (t.text in UNARY || t.text in VARIADIC) throw errors.formula(`function ${t.text} needs arguments: ${t.text}(...)`, t.pos);
        return { kind: 'var', name: t.text, pos: t.pos };
      }
      if (!(t.text in UNARY || t.text in VARIADIC)) {
        throw errors.formula(`unknown function "${t.text}"; known: ${FORMULA_FUNCTIONS.join(', ')}`, t.pos);
      }
      this.next();
      const args = [this.expr()];
      while (this.isOp(',')) {
        this.next();
        args.push(this.expr());
      }
      this.expect(')', '")"');
      if (t.text in UNARY && args.length !== 1) {
        throw errors.formula(`${t.text} takes exactly one argument, got ${args.length}`, t.pos);
      }
      return { kind: 'call', fn: t.text, args, pos: t.pos };
    }
    if (t.type === 'op' && t.text === '(') {
      const inner = this.expr();
      this.expect(')', '")"');
      return inner;
    }
    throw errors.formula(`expected a number, a name or "(", found ${describe(t)}`, t.pos);
  }
}

function describe(t: Token): string {
  return t.type === 'end' ? 'the end of the formula' : `"${t.text}"`;
}

/** Parses a formula; when `names` is given, every variable must be one of them. */
export function parseFormula(src: string, names?: Iterable<string>): FormulaNode {
  const ast = new Parser(tokenize(src)).parse();
  if (names !== undefined) {
    const known = new Set(names);
    for (const v of variables(ast)) {
      if (!known.has(v.name)) throw errors.formula(`unknown name "${v.name}"; known: ${[...known].join(', ') || '(none)'}`, v.pos);
    }
  }
  return ast;
}

function variables(node: FormulaNode): Array<{ name: string; pos: number }> {
  switch (node.kind) {
    case 'num':
      return [];
    case 'var':
      return [{ name: node.name, pos: node.pos }];
    case 'neg':
      return variables(node.arg);
    case 'bin':
      return [...variables(node.left), ...variables(node.right)];
    case 'call':
      return node.args.flatMap(variables);
  }
}

function finite(x: number, pos: number, what: string): number {
  if (!Number.isFinite(x)) throw errors.formula(`${what} is not a finite number (${x})`, pos);
  return x;
}

function binary(op: '+' | '-' | '*' | '/' | '^', a: number, b: number, pos: number): number {
  switch (op) {
    case '+':
      return finite(a + b, pos, 'the sum');
    case '-':
      return finite(a - b, pos, 'the difference');
    case '*':
      return finite(a * b, pos, 'the product');
    case '/':
      if (b === 0) throw errors.formula('division by zero', pos);
      return finite(a / b, pos, 'the quotient');
    case '^':
      return finite(Math.pow(a, b), pos, 'the power');
  }
}

/** Evaluates a parsed formula; every intermediate result must be finite. */
export function evaluateFormula(node: FormulaNode, env: Record<string, number>): number {
  switch (node.kind) {
    case 'num':
      return finite(node.value, node.pos, 'the number');
    case 'var': {
      const v = Object.hasOwn(env, node.name) ? env[node.name] : undefined;
      if (v === undefined) throw errors.formula(`unknown name "${node.name}"`, node.pos);
      return finite(v, node.pos, `"${node.name}"`);
    }
    case 'neg':
      return -evaluateFormula(node.arg, env);
    case 'bin':
      return binary(node.op, evaluateFormula(node.left, env), evaluateFormula(node.right, env), node.pos);
    case 'call': {
      const args = node.args.map((a) => evaluateFormula(a, env));
      const variadic = VARIADIC[node.fn];
      const f = variadic ?? UNARY[node.fn];
      if (!f) throw errors.formula(`unknown function "${node.fn}"`, node.pos);
      return finite(variadic ? variadic(...args) : f(args[0] ?? Number.NaN), node.pos, `${node.fn}(...)`);
    }
  }
}

/** Parse and evaluate in one step. */
export function calculate(src: string, env: Record<string, number>): number {
  return evaluateFormula(parseFormula(src, Object.keys(env)), env);
}
