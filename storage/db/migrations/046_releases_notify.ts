import { notifyOnChange } from './notifyOnChange.ts';

/** Any change to the releases or to team membership (what decides which releases an account may see) notifies `silico_releases_changed`. */
export const { up, down } = notifyOnChange('silico_notify_releases_changed', 'silico_releases_changed', ['releases', 'account_members']);
