/** PEtab's parameter scales (parameterScale): a linear value on its scale, and back. */
export function onScale(value: number, scale: string): number {
  if (scale === 'log10') return Math.log10(value);
  if (scale === 'log') return Math.log(value);
  return value;
}

export function unscale(value: number, scale: string): number {
  if (scale === 'log10') return 10 ** value;
  if (scale === 'log') return Math.exp(value);
  return value;
}
