import {
  applyIds,
  basketDiff,
  chunks,
  clickSelect,
  fill,
  gridMove,
  linksCsv,
  linksText,
  overLimit,
  pageState,
  rangeIds,
  runEach,
  selectionRefusal,
  togglePage,
  type LinkEntry,
} from '../src/lib/selection';

const page = ['a', 'b', 'c', 'd', 'e'];

describe('selecting in the grid', () => {
  it('takes the range between the anchor and the clicked one, either way, both ends included', () => {
    expect(rangeIds(page, 'b', 'd')).toEqual(['b', 'c', 'd']);
    expect(rangeIds(page, 'd', 'b')).toEqual(['b', 'c', 'd']);
    expect(rangeIds(page, 'c', 'c')).toEqual(['c']);
    // No anchor, or one on another page: just the clicked asset.
    expect(rangeIds(page, undefined, 'c')).toEqual(['c']);
    expect(rangeIds(page, 'zz', 'c')).toEqual(['c']);
    expect(rangeIds(page, 'a', 'zz')).toEqual([]);
  });

  it('toggles one on a click and sets the whole range to the clicked state on a shift-click', () => {
    let sel = clickSelect(page, [], undefined, 'a', false);
    expect(sel).toEqual(['a']);
    sel = clickSelect(page, sel, 'a', 'c', true);
    expect(sel).toEqual(['a', 'b', 'c']);
    // Shift-click on a selected one unselects the range.
    sel = clickSelect(page, sel, 'c', 'b', true);
    expect(sel).toEqual(['a']);
    sel = clickSelect(page, sel, 'b', 'a', false);
    expect(sel).toEqual([]);
  });

  it('keeps the selection of other pages and the order of selecting, without duplicates', () => {
    expect(applyIds(['x', 'b'], ['a', 'b', 'c', 'a'], true)).toEqual(['x', 'b', 'a', 'c']);
    expect(applyIds(['x', 'b', 'c'], ['b', 'c'], false)).toEqual(['x']);
  });

  it('selects all on the page, or none when all already are, and says which it is', () => {
    expect(togglePage(page, ['x'])).toEqual(['x', ...page]);
    expect(togglePage(page, ['x', ...page])).toEqual(['x']);
    expect(pageState(page, ['x'])).toBe('none');
    expect(pageState(page, ['a'])).toBe('some');
    expect(pageState(page, [...page])).toBe('all');
  });

  it('moves with the arrow keys: by one left and right, by a row up and down, never out of the grid', () => {
    // 10 cards, 4 a row: 0-3, 4-7, 8-9.
    expect(gridMove(5, 'ArrowRight', 4, 10)).toBe(6);
    expect(gridMove(5, 'ArrowLeft', 4, 10)).toBe(4);
    expect(gridMove(5, 'ArrowDown', 4, 10)).toBe(9);
    expect(gridMove(5, 'ArrowUp', 4, 10)).toBe(1);
    expect(gridMove(7, 'ArrowDown', 4, 10)).toBeUndefined();
    expect(gridMove(0, 'ArrowLeft', 4, 10)).toBeUndefined();
    expect(gridMove(9, 'ArrowRight', 4, 10)).toBeUndefined();
    expect(gridMove(5, 'Home', 4, 10)).toBe(0);
    expect(gridMove(5, 'End', 4, 10)).toBe(9);
    expect(gridMove(5, ' ', 4, 10)).toBeUndefined();
    // One column (a phone): up and down by one.
    expect(gridMove(1, 'ArrowDown', 0, 3)).toBe(2);
    expect(gridMove(2, 'ArrowDown', 1, 3)).toBeUndefined();
  });
});

describe('SELECTED_ASSETS in step with the selection', () => {
  it('adds what was selected and removes what was unselected', () => {
    expect(basketDiff(['a', 'b', 'c'], ['b', 'c', 'd', 'e'])).toEqual({ add: ['d', 'e'], remove: ['a'] });
    expect(basketDiff(['a'], ['a'])).toEqual({ add: [], remove: [] });
    expect(basketDiff([], [])).toEqual({ add: [], remove: [] });
  });
});

describe('the 300-asset limit of a collection', () => {
  it("refuses past 300 in the words of the API's 409 COLLECTION_FULL", () => {
    expect(overLimit(290, 10)).toBeUndefined();
    expect(overLimit(0, 300)).toBeUndefined();
    expect(overLimit(295, 6)).toBe('A collection holds at most 300 assets (it has 295, 6 more asked)');
  });

  it('refuses a selection past 300 (SELECTED_ASSETS is a collection) but always lets it shrink', () => {
    expect(selectionRefusal(290, 300)).toBeUndefined();
    expect(selectionRefusal(290, 301)).toBe(
      'At most 300 assets can be selected: the selection is kept in SELECTED_ASSETS, a collection, which holds at most 300 (301 asked)',
    );
    expect(selectionRefusal(320, 310)).toBeUndefined();
  });

  it('shows how full it is, nearly full from 270 on', () => {
    expect(fill(12)).toEqual({ text: '12 / 300', ratio: 0.04, near: false, full: false });
    expect(fill(270).near).toBe(true);
    expect(fill(300)).toMatchObject({ near: true, full: true, ratio: 1 });
  });
});

describe('links of a selection', () => {
  const entries: LinkEntry[] = [
    { id: 'a', url: 'https://cdn.example/a?signature=1', expires_at: '2026-11-28T00:00:00.000Z' },
    { id: 'b', error: { code: 'ASSET_IN_TRASH', message: 'The asset is in the trash' } },
    { id: 'c', url: 'https://cdn.example/c?signature=2', expires_at: '2026-11-28T00:00:00.000Z' },
  ];

  it('asks Get Link 100 ids at a time', () => {
    const ids = Array.from({ length: 250 }, (_, i) => `id${i}`);
    expect(chunks(ids, 100).map((c) => c.length)).toEqual([100, 100, 50]);
    expect(chunks([], 100)).toEqual([]);
  });

  it('lists one URL a line to copy, leaving out the ids that carried an error', () => {
    expect(linksText(entries)).toBe('https://cdn.example/a?signature=1\nhttps://cdn.example/c?signature=2');
  });

  it("writes a CSV with a row per asset, its error in the contract's words, quoting what needs it", () => {
    const csv = linksCsv(
      entries,
      new Map([
        ['a', 'harbour, at dusk.png'],
        ['b', 'say "hi".png'],
      ]),
    );
    expect(csv.split('\r\n')).toEqual([
      'id,name,url,expires_at,error',
      'a,"harbour, at dusk.png",https://cdn.example/a?signature=1,2026-11-28T00:00:00.000Z,',
      'b,"say ""hi"".png",,,The asset is in the trash (ASSET_IN_TRASH)',
      'c,,https://cdn.example/c?signature=2,2026-11-28T00:00:00.000Z,',
      '',
    ]);
  });
});

describe('acting on each selected asset', () => {
  it('runs every one (a failure stops none), a few at a time, reporting progress', async () => {
    let running = 0;
    let most = 0;
    const progress: number[] = [];
    const results = await runEach(
      [1, 2, 3, 4, 5, 6, 7],
      async (n) => {
        running += 1;
        most = Math.max(most, running);
        await new Promise((r) => setImmediate(r));
        running -= 1;
        if (n % 3 === 0) throw new Error(`no ${n}`);
        return n * 10;
      },
      (done) => progress.push(done),
      3,
    );
    expect(most).toBeLessThanOrEqual(3);
    expect(progress).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(results.map((r) => (r.ok ? r.value : (r.error as Error).message))).toEqual([10, 20, 'no 3', 40, 50, 'no 6', 70]);
  });
});
