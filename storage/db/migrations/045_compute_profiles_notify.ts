import { notifyOnChange } from './notifyOnChange.ts';

/** Any change to the compute profiles (an operator's price, a bound, a new profile) notifies `silico_compute_profiles_changed`. */
export const { up, down } = notifyOnChange('silico_notify_compute_profiles_changed', 'silico_compute_profiles_changed', ['compute_profiles']);
