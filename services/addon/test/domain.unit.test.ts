import { MAX_INDEXED_WORDS, ocrResultOf } from '../src/domain/ocr';
import sharp from 'sharp';
import { colourName, dominantColour, taggingOf } from '../src/domain/tagging';

describe('colour names', () => {
  it('name the dominant colour by hue, saturation and lightness', () => {
    expect([
      colourName(0, 0, 0),
      colourName(250, 250, 250),
      colourName(128, 128, 130),
      colourName(220, 30, 30),
      colourName(30, 160, 40),
      colourName(31, 79, 208),
    ]).toEqual(['black', 'white', 'grey', 'red', 'green', 'blue']);
    expect([colourName(230, 140, 20), colourName(120, 70, 20), colourName(240, 220, 40), colourName(140, 40, 200)]).toEqual([
      'orange',
      'brown',
      'yellow',
      'purple',
    ]);
  });
});

describe('dominant colour', () => {
  /** Raw RGB of `width`×`height`: the top `share` of the rows one colour, the rest another. */
  const split = (width: number, height: number, share: number, top: number[], bottom: number[]) => {
    const rgb = new Uint8Array(width * height * 3);
    for (let y = 0; y < height; y++) for (let x = 0; x < width; x++) rgb.set(y < height * share ? top : bottom, (y * width + x) * 3);
    return rgb;
  };

  it('is the fullest bin of a 16-level histogram, at its centre, as sharp finds it', async () => {
    const rgb = split(1024, 683, 0.6, [200, 30, 40], [20, 60, 210]);
    expect(dominantColour(rgb, 1024, 683)).toEqual({ r: 200, g: 24, b: 40 });
    const { dominant } = await sharp(Buffer.from(rgb), { raw: { width: 1024, height: 683, channels: 3 } }).stats();
    expect(dominantColour(rgb, 1024, 683)).toEqual(dominant);
    expect(dominantColour(split(1024, 683, 0.3, [200, 30, 40], [20, 60, 210]), 1024, 683)).toEqual({ r: 24, g: 56, b: 216 });
  });

  it('reads images smaller than its grid, down to one pixel', () => {
    expect(dominantColour(new Uint8Array([255, 255, 255]), 1, 1)).toEqual({ r: 248, g: 248, b: 248 });
    expect(dominantColour(split(3, 50, 0.6, [0, 0, 0], [100, 100, 100]), 3, 50)).toEqual({ r: 8, g: 8, b: 8 });
  });
});

describe('tagging', () => {
  it('keeps each object once at its best score above the threshold, sure ones as best guesses', () => {
    const t = taggingOf({
      objects: [
        { label: 'cup', score: 0.45 },
        { label: 'cup', score: 0.31 },
        { label: 'person', score: 0.62 },
        { label: 'bottle', score: 0.2 },
      ],
      dominant: { r: 250, g: 250, b: 250 },
      width: 400,
      height: 400,
      minConfidence: 0.3,
    });
    expect(t).toEqual({
      labels: [
        { label: 'person', confidence: 0.62 },
        { label: 'cup', confidence: 0.45 },
        { label: 'white', confidence: 1 },
        { label: 'square', confidence: 1 },
      ],
      best_guess: ['person'],
    });
  });
});

describe('OCR output', () => {
  it('joins words into lines and paragraphs, and indexes distinct words of three or more characters', () => {
    const row = (par: number, line: number, word: number, text: string, conf = 95) => `5\t1\t1\t${par}\t${line}\t${word}\t0\t0\t10\t10\t${conf}\t${text}`;
    const tsv = [
      'level\tpage_num\tblock_num\tpar_num\tline_num\tword_num\tleft\ttop\twidth\theight\tconf\ttext',
      row(1, 1, 1, 'An'),
      row(1, 1, 2, 'invoice'),
      row(1, 2, 1, 'of'),
      row(1, 2, 2, 'Invoice'),
      row(2, 1, 1, '2026'),
      '4\t1\t1\t1\t1\t0\t0\t0\t1\t1\t-1\t',
    ].join('\n');
    expect(ocrResultOf(tsv)).toEqual({ text: 'An invoice\nof Invoice\n\n2026', words: ['invoice', '2026'] });
    const many = ['level', ...Array.from({ length: 600 }, (_, i) => row(1, 1, i, `word${i}`))].join('\n');
    expect(ocrResultOf(many).words).toHaveLength(MAX_INDEXED_WORDS);
  });
});
