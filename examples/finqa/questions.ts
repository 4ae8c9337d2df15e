// The finqa questions with the evidence that backs each answer. build-dataset.ts checks every
// quote against the corpus and recomputes every answer from its quotes before writing the JSONL
// files, so editing a document without fixing its questions fails the build instead of silently
// training on a wrong reference.

export type Kind = 'lookup' | 'multi_hop' | 'conversion' | 'trap' | 'text';

export interface Evidence {
  /** doc_id (file name without .md). */
  doc: string;
  /** Text that must appear verbatim in the document. */
  quote: string;
  /** Names bound, in order, to the numbers of the quote (as the grader's extractNumbers reads them). */
  names?: string[];
}

export interface Question {
  id: string;
  split: 'train' | 'valid';
  kind: Kind;
  question: string;
  reference_answer: string;
  answer_type: 'number' | 'text';
  /** Relative tolerance of numeric answers (the grader's default is 0.001). */
  tolerance?: number;
  /** Other accepted spellings of a text answer. */
  aliases?: string[];
  evidence: Evidence[];
  /** The answer from the named evidence numbers; without it the answer is the first named number. */
  compute?: (v: Record<string, number>) => number;
  /** A figure from a preliminary or secondary document that must not earn credit. */
  trap?: { doc: string; quote: string };
}

const pct = (a: number, b: number): number => ((a - b) / b) * 100;

export const questions: Question[] = [
  {
    id: 'halvorsen-q1-revenue',
    split: 'train',
    kind: 'lookup',
    question: "What was Halvorsen Maritime Systems' revenue in the first quarter of 2025?",
    reference_answer: '$48.6 million',
    answer_type: 'number',
    evidence: [{ doc: 'halvorsen-q1-2025', quote: 'Revenue of $48.6 million for the first quarter of 2025', names: ['r'] }],
  },
  {
    id: 'halvorsen-q2-revenue-final',
    split: 'train',
    kind: 'trap',
    question: "What was Halvorsen Maritime Systems' final reported revenue for the second quarter of 2025?",
    reference_answer: '$51.7 million',
    answer_type: 'number',
    evidence: [{ doc: 'halvorsen-q2-2025', quote: 'Final revenue is $51.7 million', names: ['r'] }],
    trap: { doc: 'halvorsen-q2-2025-preliminary', quote: 'second-quarter revenue of approximately $52.3 million' },
  },
  {
    id: 'halvorsen-headcount-june',
    split: 'train',
    kind: 'lookup',
    question: 'How many full-time employees did Halvorsen Maritime Systems have on 30 June 2025?',
    reference_answer: '1185',
    answer_type: 'number',
    evidence: [{ doc: 'halvorsen-q2-2025', quote: 'Headcount was 1,185 full-time employees on 30 June 2025', names: ['n'] }],
  },
  {
    id: 'halvorsen-fleet-backlog',
    split: 'train',
    kind: 'lookup',
    question: "What was Halvorsen's Fleet Services order backlog at the end of June 2025?",
    reference_answer: '$63.4 million',
    answer_type: 'number',
    evidence: [{ doc: 'halvorsen-earnings-call-q2-2025', quote: 'The Fleet Services order backlog stood at $63.4 million', names: ['b'] }],
  },
  {
    id: 'halvorsen-h1-revenue',
    split: 'train',
    kind: 'multi_hop',
    question:
      'What was the total revenue of Halvorsen Maritime Systems for the first half of 2025 (first plus second quarter, using the final figures)?',
    reference_answer: '$100.3 million',
    answer_type: 'number',
    evidence: [
      { doc: 'halvorsen-q1-2025', quote: 'Revenue of $48.6 million for the first quarter', names: ['q1'] },
      { doc: 'halvorsen-q2-2025', quote: 'Final revenue is $51.7 million', names: ['q2'] },
    ],
    compute: (v) => v.q1! + v.q2!,
    trap: { doc: 'halvorsen-q2-2025-preliminary', quote: 'approximately $52.3 million' },
  },
  {
    id: 'halvorsen-navigation-qoq',
    split: 'train',
    kind: 'multi_hop',
    question: "By what percentage did Halvorsen's Navigation Systems revenue grow from Q1 2025 to Q2 2025?",
    reference_answer: '6.2%',
    answer_type: 'number',
    tolerance: 0.02,
    evidence: [
      { doc: 'halvorsen-q2-2025', quote: '| Navigation Systems | $30.9 million | $28.7 million | $29.1 million |', names: ['q2', 'q2ly', 'q1'] },
    ],
    compute: (v) => pct(v.q2!, v.q1!),
  },
  {
    id: 'bluefinch-fy2024-revenue',
    split: 'train',
    kind: 'lookup',
    question: "What was Bluefinch Analytics' total revenue for fiscal 2024?",
    reference_answer: '$312.4 million',
    answer_type: 'number',
    evidence: [{ doc: 'bluefinch-fy2024-annual', quote: 'Total revenue reached $312.4 million', names: ['r'] }],
  },
  {
    id: 'bluefinch-q1-subscription',
    split: 'train',
    kind: 'conversion',
    question: "What was Bluefinch Analytics' subscription revenue in the first quarter of fiscal 2025, in US dollars?",
    reference_answer: '$73.48 million',
    answer_type: 'number',
    evidence: [{ doc: 'bluefinch-q1-fy2025', quote: '| Subscription revenue | 73,480 | 61,950 |', names: ['k'] }],
    compute: (v) => v.k! * 1000,
  },
  {
    id: 'bluefinch-q1-operating-loss',
    split: 'train',
    kind: 'conversion',
    question:
      "What was Bluefinch Analytics' GAAP operating income (loss) in the first quarter of fiscal 2025, in US dollars? Give a loss as a negative number.",
    reference_answer: '-$1.94 million',
    answer_type: 'number',
    evidence: [{ doc: 'bluefinch-q1-fy2025', quote: '| **Operating income (loss)** | **(1,940)** | **(6,980)** |', names: ['k'] }],
    compute: (v) => v.k! * 1000,
  },
  {
    id: 'bluefinch-lumenward-cash',
    split: 'train',
    kind: 'lookup',
    question: 'How much of the purchase price for Lumenward Data did Bluefinch Analytics agree to pay in cash?',
    reference_answer: '$31 million',
    answer_type: 'number',
    evidence: [{ doc: 'bluefinch-lumenward-acquisition', quote: 'made up of $31 million in cash', names: ['c'] }],
  },
  {
    id: 'bluefinch-lumenward-multiple',
    split: 'train',
    kind: 'multi_hop',
    question:
      "How many times Lumenward's annual recurring revenue at the end of March 2025 was the total consideration Bluefinch agreed to pay for it? Give the ratio of price to ARR.",
    reference_answer: '5.9',
    answer_type: 'number',
    tolerance: 0.02,
    evidence: [
      { doc: 'bluefinch-lumenward-acquisition', quote: 'total consideration of $46 million', names: ['price'] },
      { doc: 'bluefinch-lumenward-acquisition', quote: 'annual recurring revenue of $7.8 million', names: ['arr'] },
    ],
    compute: (v) => v.price! / v.arr!,
  },
  {
    id: 'bluefinch-guidance-midpoint-raise',
    split: 'train',
    kind: 'multi_hop',
    question: 'By how much did Bluefinch Analytics raise the midpoint of its fiscal 2025 revenue guidance with its second-quarter results?',
    reference_answer: '$10 million',
    answer_type: 'number',
    evidence: [
      {
        doc: 'bluefinch-q2-fy2025',
        quote: '$362 million to $368 million, up from the previous range of $352 million to $358 million',
        names: ['lo', 'hi', 'oldLo', 'oldHi'],
      },
    ],
    compute: (v) => (v.lo! + v.hi!) / 2 - (v.oldLo! + v.oldHi!) / 2,
  },
  {
    id: 'corvane-2024-net-sales',
    split: 'train',
    kind: 'lookup',
    question: "What were Corvane Foods' net sales for 2024?",
    reference_answer: '$1.84 billion',
    answer_type: 'number',
    evidence: [{ doc: 'corvane-fy2024-annual', quote: 'Net sales were $1.84 billion', names: ['s'] }],
  },
  {
    id: 'corvane-h1-net-sales-final',
    split: 'train',
    kind: 'trap',
    question: "What were Corvane Foods' final net sales for the first half of 2025?",
    reference_answer: '$944.6 million',
    answer_type: 'number',
    evidence: [{ doc: 'corvane-h1-2025-interim', quote: 'Final net sales are therefore $944.6 million', names: ['s'] }],
    trap: { doc: 'corvane-h1-2025-trading-update', quote: 'net sales for the first half of around $961 million' },
  },
  {
    id: 'corvane-frozen-share-2024',
    split: 'train',
    kind: 'multi_hop',
    question: "What share of Corvane Foods' 2024 net sales came from the Frozen segment, in percent?",
    reference_answer: '28.8%',
    answer_type: 'number',
    tolerance: 0.01,
    evidence: [
      { doc: 'corvane-fy2024-annual', quote: '| Frozen | $530 million | $483 million | $81 million |', names: ['frozen'] },
      { doc: 'corvane-fy2024-annual', quote: '| **Group** | **$1,840 million** |', names: ['group'] },
    ],
    compute: (v) => (v.frozen! / v.group!) * 100,
  },
  {
    id: 'corvane-plant-closure',
    split: 'train',
    kind: 'text',
    question: 'Which Corvane Foods plant is being closed as a result of the bakery network review?',
    reference_answer: 'Ashbourne Vale',
    answer_type: 'text',
    aliases: ['Ashbourne Vale bakery'],
    evidence: [{ doc: 'corvane-h1-2025-interim', quote: 'the board has decided to close the Ashbourne Vale bakery' }],
  },
  {
    id: 'corvane-closure-roles',
    split: 'train',
    kind: 'lookup',
    question: "How many roles are affected by the closure of Corvane Foods' Ashbourne Vale bakery?",
    reference_answer: '310',
    answer_type: 'number',
    evidence: [{ doc: 'corvane-h1-2025-interim', quote: 'The closure affects 310 roles', names: ['n'] }],
  },
  {
    id: 'corvane-h1-ebitda-margin',
    split: 'train',
    kind: 'lookup',
    question: "What was Corvane Foods' adjusted EBITDA margin for the first half of 2025, in percent?",
    reference_answer: '11.5%',
    answer_type: 'number',
    tolerance: 0.01,
    evidence: [{ doc: 'corvane-h1-2025-interim', quote: 'Adjusted EBITDA of $108.7 million, a margin of 11.5%', names: ['e', 'm'] }],
    compute: (v) => v.m!,
  },
  {
    id: 'pellucid-capacity-mw',
    split: 'train',
    kind: 'conversion',
    question: "What was Pellucid Energy's installed operating capacity at 30 September 2025, in megawatts?",
    reference_answer: '2410',
    answer_type: 'number',
    evidence: [{ doc: 'pellucid-q3-2025', quote: 'Installed operating capacity of 2.41 GW at 30 September 2025', names: ['gw'] }],
    compute: (v) => v.gw! * 1000,
    trap: { doc: 'pellucid-q2-2025', quote: 'Installed operating capacity of 2.07 GW' },
  },
  {
    id: 'pellucid-dry-creek-cost-per-mw',
    split: 'train',
    kind: 'multi_hop',
    question: "What was the total cost of Pellucid Energy's Dry Creek project per MW of solar capacity, in US dollars?",
    reference_answer: '$876,471',
    answer_type: 'number',
    tolerance: 0.005,
    evidence: [
      { doc: 'pellucid-dry-creek-cod', quote: 'Total project cost was $298 million', names: ['cost'] },
      { doc: 'pellucid-dry-creek-cod', quote: 'Dry Creek combines 340 MW of solar generation', names: ['mw'] },
    ],
    compute: (v) => v.cost! / v.mw!,
  },
  {
    id: 'pellucid-revenue-qoq',
    split: 'train',
    kind: 'lookup',
    question: "By what percentage did Pellucid Energy's revenue grow from the second to the third quarter of 2025?",
    reference_answer: '12.9%',
    answer_type: 'number',
    tolerance: 0.01,
    evidence: [
      { doc: 'pellucid-q3-2025', quote: 'Revenue of $137.2 million, up 12.9% from $121.5 million', names: ['q3', 'g', 'q2'] },
    ],
    compute: (v) => pct(v.q3!, v.q2!),
  },
  {
    id: 'pellucid-guidance-midpoint',
    split: 'train',
    kind: 'multi_hop',
    question: "What is the midpoint of Pellucid Energy's updated full-year 2025 revenue guidance?",
    reference_answer: '$520 million',
    answer_type: 'number',
    evidence: [
      {
        doc: 'pellucid-guidance-revision',
        quote: '| Revenue | $540 million – $560 million | $510 million – $530 million |',
        names: ['oldLo', 'oldHi', 'lo', 'hi'],
      },
    ],
    compute: (v) => (v.lo! + v.hi!) / 2,
  },
  {
    id: 'tessaline-q1-revenue-final',
    split: 'train',
    kind: 'trap',
    question: "What was Tessaline Robotics' final revenue for the first quarter of 2025?",
    reference_answer: '$6.412 million',
    answer_type: 'number',
    tolerance: 0.002,
    evidence: [{ doc: 'tessaline-q1-2025', quote: '| **Total revenue** | **6,412** | **5,130** |', names: ['k'] }],
    compute: (v) => v.k! * 1000,
    trap: { doc: 'tessaline-q1-2025-preliminary', quote: 'revenue of approximately $6.9 million' },
  },
  {
    id: 'tessaline-rd-intensity-2024',
    split: 'train',
    kind: 'multi_hop',
    question: "What was Tessaline Robotics' research and development expense as a percentage of its revenue in 2024?",
    reference_answer: '34.0%',
    answer_type: 'number',
    tolerance: 0.01,
    evidence: [
      { doc: 'tessaline-fy2024-annual', quote: 'Research and development expense of $9.1 million', names: ['rd'] },
      { doc: 'tessaline-fy2024-annual', quote: 'Revenue of $26.8 million, up 34%', names: ['rev'] },
    ],
    compute: (v) => (v.rd! / v.rev!) * 100,
  },
  {
    id: 'bluefinch-acquisition-target',
    split: 'train',
    kind: 'text',
    question: 'Which company did Bluefinch Analytics agree to acquire in May 2025?',
    reference_answer: 'Lumenward Data',
    answer_type: 'text',
    aliases: ['Lumenward', 'Lumenward Data Ltd'],
    evidence: [{ doc: 'bluefinch-lumenward-acquisition', quote: 'a definitive agreement to acquire Lumenward Data Ltd' }],
  },
  {
    id: 'pellucid-august-project',
    split: 'train',
    kind: 'text',
    question: 'Which Pellucid Energy project entered commercial operation in August 2025?',
    reference_answer: 'Dry Creek',
    answer_type: 'text',
    evidence: [{ doc: 'pellucid-dry-creek-cod', quote: 'its Dry Creek solar and storage project reached commercial operation on 14 August 2025' }],
  },

  // validation
  {
    id: 'halvorsen-q2-operating-income-final',
    split: 'valid',
    kind: 'trap',
    question: "What was Halvorsen Maritime Systems' operating income for the second quarter of 2025, as finally reported?",
    reference_answer: '$7.1 million',
    answer_type: 'number',
    evidence: [{ doc: 'halvorsen-q2-2025', quote: 'Operating income of $7.1 million, an operating margin of 13.7%', names: ['oi'] }],
    trap: { doc: 'halvorsen-q2-2025-preliminary', quote: 'operating income of approximately $7.4 million' },
  },
  {
    id: 'bluefinch-q2-growth',
    split: 'valid',
    kind: 'lookup',
    question: "By what percentage did Bluefinch Analytics' total revenue grow year on year in the second quarter of fiscal 2025?",
    reference_answer: '21%',
    answer_type: 'number',
    tolerance: 0.005,
    evidence: [{ doc: 'bluefinch-q2-fy2025', quote: 'Total revenue of $88.9 million, up 21% from $73.5 million', names: ['r', 'g', 'r0'] }],
    compute: (v) => v.g!,
    trap: { doc: 'bluefinch-q2-fy2025', quote: 'Excluding Lumenward, revenue grew 20%' },
  },
  {
    id: 'corvane-h1-frozen',
    split: 'valid',
    kind: 'lookup',
    question: "What were Corvane Foods' Frozen segment net sales in the first half of 2025?",
    reference_answer: '$282.9 million',
    answer_type: 'number',
    evidence: [{ doc: 'corvane-h1-2025-interim', quote: '| Frozen | $282.9 million | $261.0 million | +8.4% |', names: ['f'] }],
  },
  {
    id: 'pellucid-q3-net-loss',
    split: 'valid',
    kind: 'conversion',
    question: "What was Pellucid Energy's net income (loss) for the third quarter of 2025, in US dollars? Give a loss as a negative number.",
    reference_answer: '-$8.9 million',
    answer_type: 'number',
    evidence: [{ doc: 'pellucid-q3-2025', quote: 'Net loss of $(8.9) million (Q3 2024', names: ['m'] }],
    compute: (v) => v.m! * 1e6,
  },
  {
    id: 'tessaline-hardware-per-unit',
    split: 'valid',
    kind: 'multi_hop',
    question: 'What was the average hardware revenue per robot shipped by Tessaline Robotics in the first quarter of 2025, in US dollars?',
    reference_answer: '$17,674',
    answer_type: 'number',
    tolerance: 0.005,
    evidence: [
      { doc: 'tessaline-q1-2025', quote: '| Hardware revenue | 5,090 | 3,950 |', names: ['k'] },
      { doc: 'tessaline-q1-2025', quote: '288 robots shipped (Q1 2024: 224)', names: ['units'] },
    ],
    compute: (v) => (v.k! * 1000) / v.units!,
  },
  {
    id: 'halvorsen-cfo',
    split: 'valid',
    kind: 'text',
    question: 'Who is the chief financial officer of Halvorsen Maritime Systems?',
    reference_answer: 'Ingrid Solberg',
    answer_type: 'text',
    evidence: [{ doc: 'halvorsen-q2-2025-preliminary', quote: 'said chief financial officer Ingrid Solberg' }],
  },
];
