import { EgressError, egressFetch, type EgressInit } from '../http/egress.js';
import { CrmEgressError } from './errors.js';

/** Every CRM request (token, REST, SOAP, reachability) goes out through the egress client. */
export async function crmFetch(url: string | URL, init: EgressInit): Promise<Response> {
  try {
    return await egressFetch(url, init);
  } catch (err) {
    if (err instanceof EgressError) throw new CrmEgressError(err);
    throw err;
  }
}
