// The cache tier's purge (deploy/cache/nginx-cdn.conf.template): open-source nginx has none, and Debian's
// cache-purge module (2.3) takes one exact key per request. link-signing knows every key the tier fetched
// (X-Cache-Key) and POSTs those of a purged or replaced asset here, one a line; each key's file is where
// proxy_cache_path levels=1:2 puts it (md5 of the key: its last character, then the two before). nginx treats a
// missing file as a miss and fetches again. Vary is not followed (its variant files are named by the client's
// Accept, which no key tells): a format=auto link's key ends with its Accept class instead (map $cdn_variant in
// nginx-cdn.conf.template), so every variant is a key of its own here. njs 0.7 (Debian 12) and later.
var fs = require('fs');
var crypto = require('crypto');

function purge(r) {
  if (r.method !== 'POST') {
    r.return(405);
    return;
  }
  var dir = r.variables.cache_dir;
  var keys = (r.requestText || '').split('\n');
  var deleted = 0;
  for (var i = 0; i < keys.length; i++) {
    var key = keys[i];
    if (!key) continue;
    var md5 = crypto.createHash('md5').update(key).digest('hex');
    var file = dir + '/' + md5.slice(-1) + '/' + md5.slice(-3, -1) + '/' + md5;
    try {
      fs.unlinkSync(file);
      deleted++;
    } catch (e) {
      // Not cached (never fetched here, evicted, already purged).
    }
  }
  r.headersOut['Content-Type'] = 'application/json';
  r.return(200, JSON.stringify({ keys: keys.filter(Boolean).length, deleted: deleted }) + '\n');
}

export default { purge };
