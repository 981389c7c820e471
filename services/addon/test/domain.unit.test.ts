import { MAX_INDEXED_WORDS, ocrResultOf } from '../src/domain/ocr';
import { colourName, taggingOf } from '../src/domain/tagging';

describe('colour names', () => {
  it('name the dominant colour by hue, saturation and lightness', () => {
    expect([colourName(0, 0, 0), colourName(250, 250, 250), colourName(128, 128, 130), colourName(220, 30, 30), colourName(30, 160, 40), colourName(31, 79, 208)]).toEqual([
      'black',
      'white',
      'grey',
      'red',
      'green',
      'blue',
    ]);
    expect([colourName(230, 140, 20), colourName(120, 70, 20), colourName(240, 220, 40), colourName(140, 40, 200)]).toEqual(['orange', 'brown', 'yellow', 'purple']);
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
    const tsv = ['level\tpage_num\tblock_num\tpar_num\tline_num\tword_num\tleft\ttop\twidth\theight\tconf\ttext', row(1, 1, 1, 'An'), row(1, 1, 2, 'invoice'), row(1, 2, 1, 'of'), row(1, 2, 2, 'Invoice'), row(2, 1, 1, '2026'), '4\t1\t1\t1\t1\t0\t0\t0\t1\t1\t-1\t'].join('\n');
    expect(ocrResultOf(tsv)).toEqual({ text: 'An invoice\nof Invoice\n\n2026', words: ['invoice', '2026'] });
    const many = ['level', ...Array.from({ length: 600 }, (_, i) => row(1, 1, i, `word${i}`))].join('\n');
    expect(ocrResultOf(many).words).toHaveLength(MAX_INDEXED_WORDS);
  });
});
