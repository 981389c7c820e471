import { addonResultsAfter, addonResultsWithout } from '../src/domain/addon-labels';

const tagging = {
  labels: [
    { label: 'cup', confidence: 0.45 },
    { label: 'white', confidence: 1 },
  ],
  best_guess: ['cup'],
};
const face = { faces: [{ box: { x: 1, y: 2, width: 3, height: 4 }, confidence: 0.9, person_id: 'person_1' }] };

describe('auto_tagging labels other addons know (has-faces, has-text)', () => {
  it("stores only the addon's result while the picture has no tags", () => {
    expect(addonResultsAfter({}, 'face_recognition', face)).toEqual({ face_recognition: face });
  });

  it('adds has-faces and has-text to tags made before or after the faces and the text were found', () => {
    // Tags first, then faces: the tags gain has-faces.
    const afterFaces = addonResultsAfter({ auto_tagging: tagging }, 'face_recognition', face);
    expect(afterFaces.auto_tagging?.labels).toEqual([...tagging.labels, { label: 'has-faces', confidence: 1 }]);
    // Faces and text first, then tags.
    const afterTags = addonResultsAfter(
      { face_recognition: face, text_extraction: { text: 'Hello there', words: ['Hello', 'there'] } },
      'auto_tagging',
      tagging,
    );
    expect(afterTags.auto_tagging).toEqual({
      ...tagging,
      labels: [...tagging.labels, { label: 'has-faces', confidence: 1 }, { label: 'has-text', confidence: 1 }],
    });
  });

  it('takes the label back when a new run finds no face or no word, and never repeats it', () => {
    const tagged = addonResultsAfter({ face_recognition: face }, 'auto_tagging', tagging).auto_tagging as Record<string, unknown>;
    const noFaces = addonResultsAfter({ auto_tagging: tagged, face_recognition: face }, 'face_recognition', { faces: [] });
    expect(noFaces.auto_tagging?.labels).toEqual(tagging.labels);
    const again = addonResultsAfter({ auto_tagging: tagged, face_recognition: face }, 'face_recognition', face);
    expect((again.auto_tagging?.labels as Array<{ label: string }>).filter((l) => l.label === 'has-faces')).toHaveLength(1);
    expect(addonResultsAfter({ auto_tagging: tagging }, 'text_extraction', { text: '', words: [] }).auto_tagging?.labels).toEqual(tagging.labels);
  });

  it('takes the label back when Delete removes the faces or the text (CONTRACT §16), and keeps what is left', () => {
    const text = { text: 'Hello there', words: ['Hello', 'there'] };
    const all = {
      face_recognition: face,
      text_extraction: text,
      ...addonResultsAfter({ face_recognition: face, text_extraction: text }, 'auto_tagging', tagging),
    };
    expect(addonResultsWithout(all, ['face_recognition'])).toEqual({
      text_extraction: text,
      auto_tagging: { ...tagging, labels: [...tagging.labels, { label: 'has-text', confidence: 1 }] },
    });
    expect(addonResultsWithout(all, ['auto_tagging', 'text_extraction'])).toEqual({ face_recognition: face });
    expect(addonResultsWithout({ face_recognition: face }, ['storyboard'])).toEqual({ face_recognition: face });
  });
});
