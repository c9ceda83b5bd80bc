// The worker's workflow entry point: every lifecycle is re-exported here.
export { echoWorkflow } from './echo.js';
