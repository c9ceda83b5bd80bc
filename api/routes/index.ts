import type { AnyRoute } from '../http/route.js';
import { authRoutes } from './auth.js';
import { internalDemoRoutes } from './internal-demo.js';
import { jobRoutes } from './jobs.js';
import { metaRoutes } from './meta.js';

/** Every route of the API, in one list: the router mounts it and the OpenAPI document describes it. */
export function allRoutes(): AnyRoute[] {
  const routes: AnyRoute[] = [];
  routes.push(...metaRoutes(() => routes), ...authRoutes, ...internalDemoRoutes, ...jobRoutes);
  return routes;
}
