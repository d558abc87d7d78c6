declare module 'parse-prefer-header' {
  /** A Prefer header's preferences (RFC 7240), keyed by camel-cased name: their values, or true when they have none. */
  export default function parsePreferHeader(prefer: string | string[] | undefined): Record<string, string | true>;
}
