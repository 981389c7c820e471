/** `{base}/console/config.json`: where the browser reaches `{upload}` and `{cdn}` (gateway PUBLIC_UPLOAD_URL, PUBLIC_CDN_URL). */
export interface ConsoleConfig {
  upload: string;
  cdn: string;
}

export async function loadConfig(base: string = `${window.location.origin}/console`): Promise<ConsoleConfig> {
  const res = await fetch(`${base}/config.json`, { cache: 'no-cache' });
  if (!res.ok) throw new Error(`config.json answered ${res.status}`);
  const body = (await res.json()) as Partial<ConsoleConfig>;
  if (typeof body.upload !== 'string' || typeof body.cdn !== 'string') throw new Error('config.json lacks upload or cdn');
  return { upload: body.upload, cdn: body.cdn };
}
