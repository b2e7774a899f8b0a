/** fromIoredis() against ioredis 5 and 6 (RESP2, and RESP3 both ways) and a real redis-server. */
import { contract } from "./_contract.ts";
import { IOREDIS } from "./_flavors.ts";

contract("fromIoredis()", IOREDIS);
