/** fromNodeRedis() against node-redis 4, 5 (RESP2 and RESP3) and 6 and a real redis-server. */
import { contract } from "./_contract.ts";
import { NODE_REDIS } from "./_flavors.ts";

contract("fromNodeRedis()", NODE_REDIS);
