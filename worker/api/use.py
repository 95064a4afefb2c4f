"""Use of what was injected (learning from use): report an outcome, read an item's record."""

from __future__ import annotations

from typing import Any

from worker.api.endpoint import Call, Endpoint
from worker.ops import use as ops
from worker.settings import Settings
from worker.store.items import KINDS

TAG = "use"


async def report_use(call: Call) -> Any:
    return await ops.report(call.cairn, call.path["kind"], call.path["id"], call.body)


async def get_use(call: Call) -> Any:
    return await ops.item_use(call.cairn, call.path["kind"], call.path["id"])


def endpoints(s: Settings) -> list[Endpoint]:
    return [
        Endpoint(
            "POST",
            "/api/use/{kind}/{id:int}",
            report_use,
            "Report what became of an item when it was given (used, ignored, contradicted)",
            TAG,
            body=ops.report_schema(s),
            extra_statuses=(404,),
            rate="write",
            description=f"kind: one of {', '.join(KINDS)}; without session_id, its latest injection",
        ),
        Endpoint(
            "GET",
            "/api/use/{kind}/{id:int}",
            get_use,
            "An item's record of use: shown, used, ignored, contradicted, last evidence, shift",
            TAG,
            extra_statuses=(404,),
            description=f"kind: one of {', '.join(KINDS)}",
        ),
    ]
