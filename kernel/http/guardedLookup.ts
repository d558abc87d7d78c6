import dns from 'node:dns';
import type { LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';

/** Only public unicast addresses (no private, loopback, link-local, multicast or reserved ranges). */
export function publicAddress(address: string): boolean {
  try {
    return ipaddr.process(address).range() === 'unicast';
  } catch {
    return false;
  }
}

/**
 * The resolver outbound connections to addresses we do not control use (biology sources,
 * webhook endpoints): every address a name resolves to must be public, checked after
 * resolution (so a name that points inside is refused however it is spelled), unless
 * the configuration allows private ones (the tests' local servers). `refused` makes the
 * error the caller reports.
 */
export function guardedLookup(allowPrivate: boolean, refused: (hostname: string, address: string) => Error): LookupFunction {
  return ((hostname: string, options: dns.LookupOptions, callback: (...args: unknown[]) => void) => {
    dns.lookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err);
      const bad = addresses.find((a) => !allowPrivate && !publicAddress(a.address));
      if (bad) return callback(refused(hostname, bad.address));
      if (options.all) return callback(null, addresses);
      return callback(null, addresses[0]!.address, addresses[0]!.family);
    });
  }) as LookupFunction;
}

/** A URL whose host is a literal address that is not public: it is never looked up, so it is checked apart. */
export function literalNotPublic(url: URL): boolean {
  const literal = url.hostname.replace(/^\[|\]$/g, '');
  return ipaddr.isValid(literal) && !publicAddress(literal);
}
