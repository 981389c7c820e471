import sharp from 'sharp';
import { retainedBytesPerCall } from '@dam/testing';
import { describeImage } from '../src/adapters/image-describer';

describe('describeImage', () => {
  it('reads the EXIF fields and keeps nothing per image it describes (exifr keeps every options object it is given)', async () => {
    const jpeg = await sharp({ create: { width: 16, height: 12, channels: 3, background: '#336699' } })
      .jpeg()
      .withExif({ IFD0: { Artist: 'Ada', Copyright: 'CC0' } })
      .toBuffer();
    const described = await describeImage(jpeg, { keepGps: false });
    expect(described.exif).toEqual({ Artist: 'Ada', Copyright: 'CC0' });
    let keepGps = false;
    // Both ways of reading tags (with and without GPS). With an options literal per call each kept some 6 KB.
    const perCall = await retainedBytesPerCall(() => describeImage(jpeg, { keepGps: (keepGps = !keepGps) }), 1000);
    expect(perCall).toBeLessThan(500);
  });
});
