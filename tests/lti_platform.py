"""An LTI 1.3 platform on loopback, for the tests: the LMS side of a launch, AGS and NRPS.

Its messages are the examples of the IMS specifications themselves (LTI Core
1.3 section 5's id_token, Deep Linking 2.0's settings, AGS 2.0's line item and
score, NRPS 2.0's membership container): the same issuer, client id,
deployment id, user and claims, so the tool is tested against what the
specification says a platform sends, not against what this project's own code
would produce. It signs with a key it publishes at /jwks; `tamper` makes the
next id_token wrong in one way (another audience, an expired one, a key it
does not publish) for the refusal tests. Every service call checks the bearer
token its /token endpoint issued after verifying the tool's signed assertion
against the tool's own /lti/jwks.

As a university's LMS is, it is shared: two courses (contexts) on one
deployment, each with its own line items and memberships, a member launching
from the context they belong to (`context`), with the roles Canvas sends
(institution roles beside context ones, Mentor for an observer) and a login
where one is given (`login`). `hostile_link` makes the roster's next page point
at another origin, which records any bearer token sent to it.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import time
import uuid
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

ISSUER = "https://platform.example.edu"  # LTI Core 1.3, section 5.1.2's example
CLIENT_ID = "s6BhdRkqt3"
DEPLOYMENT = "07940580-b309-415e-a37c-914d387c1150"
LTI = "https://purl.imsglobal.org/spec/lti/claim/"
LEARNER = "http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"
INSTRUCTOR = "http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor"
MENTOR = "http://purl.imsglobal.org/vocab/lis/v2/membership#Mentor"
TEACHING_ASSISTANT = "http://purl.imsglobal.org/vocab/lis/v2/membership/Instructor#TeachingAssistant"
INSTITUTION_INSTRUCTOR = "http://purl.imsglobal.org/vocab/lis/v2/institution/person#Instructor"
SYSTEM_ADMINISTRATOR = "http://purl.imsglobal.org/vocab/lis/v2/system/person#Administrator"
COURSE = "c1d887f0-a1a3-4bca-ae25-c375edcc131a"  # LTI Core 1.3, section 5.4.1's example context
OTHER_COURSE = "9f21e8a4-5d6c-4a7e-b3f0-0c8d1e2f3a4b"  # another course of the same university, on the same deployment
CONTEXTS = {COURSE: ("ECON 1010", "Economics as a Social Science"), OTHER_COURSE: ("HIST 2020", "Modern History")}


class Platform:
    """The platform's state: its keys, the users it launches, its line items, the scores it received."""

    def __init__(self, members: list[dict[str, Any]]) -> None:
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.foreign = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.members = members
        self.tamper: dict[str, Any] = {}
        self.message = "LtiResourceLinkRequest"
        self.tokens: set[str] = set()
        self.lineitems: list[dict[str, Any]] = []
        self.scores: list[dict[str, Any]] = []
        self.url = ""
        self.tool = ""
        self.page_size = 2
        self.hostile_link = ""
        """An origin the roster's next page points at (empty: the platform's own)."""
        self.slow_scores = 0.0
        """Seconds the score endpoint takes over each score (an LMS under its own load)."""

    # -- the launch -------------------------------------------------------------------------------------------------
    def id_token(self, user: dict[str, Any], nonce: str) -> str:
        now = int(time.time())
        where = user.get("context") or COURSE
        label, title = CONTEXTS[where]
        context = {"id": where, "label": label, "title": title,
                   "type": ["http://purl.imsglobal.org/vocab/lis/v2/course#CourseOffering"]}
        claims: dict[str, Any] = {
            "iss": ISSUER, "sub": user["user_id"], "aud": CLIENT_ID, "exp": now + 600, "iat": now, "nonce": nonce,
            "name": user["name"], "email": user.get("email"),
            LTI + "message_type": self.message, LTI + "version": "1.3.0", LTI + "deployment_id": DEPLOYMENT,
            LTI + "target_link_uri": f"{self.tool}/lti/launch",
            LTI + "resource_link": {"id": "200d101f-2c14-434a-a0f3-57c2a42369fd", "title": "Introduction Assignment"},
            LTI + "roles": user["roles"], LTI + "context": context,
            LTI + "lis": {"person_sourcedid": user.get("lis_person_sourcedid"),
                          "course_section_sourcedid": "example.edu:SI182-F16"},
            LTI + "custom": {"lesson": "inference-scaling"},
            "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint": {
                "scope": ["https://purl.imsglobal.org/spec/lti-ags/scope/lineitem",
                          "https://purl.imsglobal.org/spec/lti-ags/scope/score"],
                "lineitems": f"{self.url}/{where}/lineitems"},
            "https://purl.imsglobal.org/spec/lti-nrps/claim/namesroleservice": {
                "context_memberships_url": f"{self.url}/{where}/memberships", "service_versions": ["2.0"]},
        }
        if user.get("login"):
            claims[LTI + "ext"] = {"user_username": user["login"]}
        if self.message == "LtiDeepLinkingRequest":
            claims["https://purl.imsglobal.org/spec/lti-dl/claim/deep_linking_settings"] = {
                "deep_link_return_url": f"{self.url}/deep_links", "accept_types": ["link", "ltiResourceLink"],
                "accept_presentation_document_targets": ["iframe", "window"], "data": "csrftoken:c7fbba78-7b75"}
        claims.update(self.tamper.get("claims", {}))
        key = self.foreign if self.tamper.get("foreign") else self.key
        kid = "foreign" if self.tamper.get("foreign") else "platform-key-1"
        self.tamper = {}
        return jwt.encode(claims, key, algorithm="RS256", headers={"kid": kid})

    def jwks(self) -> dict[str, Any]:
        return {"keys": [json.loads(RSAAlgorithm.to_jwk(self.key.public_key())) | {"kid": "platform-key-1",
                                                                                      "alg": "RS256", "use": "sig"}]}

    def app(self) -> Any:
        from starlette.applications import Starlette
        from starlette.responses import HTMLResponse, JSONResponse, Response
        from starlette.routing import Route

        async def jwks(request: Any) -> Any:
            return JSONResponse(self.jwks())

        async def auth(request: Any) -> Any:
            q = request.query_params
            assert (q["scope"], q["response_type"], q["response_mode"], q["prompt"], q["client_id"]) == (
                "openid", "id_token", "form_post", "none", CLIENT_ID), dict(q)
            user = next(m for m in self.members if m["user_id"] == q["login_hint"])
            token = self.id_token(user, q["nonce"])
            return HTMLResponse(f'<form method="post" action="{q["redirect_uri"]}"><input type="hidden" '
                                f'name="id_token" value="{token}"><input type="hidden" name="state" value="{q["state"]}">'
                                '</form><script>document.forms[0].submit()</script>')

        async def token(request: Any) -> Any:
            form = await request.form()
            assertion = str(form["client_assertion"])
            import httpx

            tool_keys = httpx.get(f"{self.tool}/lti/jwks").json()["keys"]
            kid = jwt.get_unverified_header(assertion)["kid"]
            key = RSAAlgorithm.from_jwk(json.dumps(next(k for k in tool_keys if k["kid"] == kid)))
            claims = jwt.decode(assertion, key, algorithms=["RS256"], audience=f"{self.url}/token")
            assert claims["iss"] == claims["sub"] == CLIENT_ID and form["grant_type"] == "client_credentials"
            issued = secrets.token_hex(16)
            self.tokens.add(issued)
            return JSONResponse({"access_token": issued, "token_type": "Bearer", "expires_in": 3600,
                                 "scope": form["scope"]})

        def authorised(request: Any) -> bool:
            return request.headers.get("authorization", "")[7:] in self.tokens

        async def lineitems(request: Any) -> Any:
            if not authorised(request):
                return Response(status_code=401)
            where = request.path_params["context"]
            if request.method == "GET":
                return JSONResponse([i for i in self.lineitems if i["context"] == where],
                                    media_type="application/vnd.ims.lis.v2.lineitemcontainer+json")
            item = await request.json()
            item["id"] = f"{self.url}/{where}/lineitems/{len(self.lineitems) + 1}/lineitem"
            self.lineitems.append(item | {"context": where})
            return JSONResponse(item, 201, media_type="application/vnd.ims.lis.v2.lineitem+json")

        async def scores(request: Any) -> Any:
            if not authorised(request) or request.headers.get("content-type") != "application/vnd.ims.lis.v1.score+json":
                return Response(status_code=401)
            await asyncio.sleep(self.slow_scores)
            self.scores.append(await request.json() | {"lineitem": request.path_params["n"],
                                                       "context": request.path_params["context"]})
            return Response(status_code=204)

        async def memberships(request: Any) -> Any:
            if not authorised(request):
                return Response(status_code=401)
            where = request.path_params["context"]
            everyone = [m for m in self.members if (m.get("context") or COURSE) == where]
            page = int(request.query_params.get("page", "0"))
            chunk = everyone[page * self.page_size:(page + 1) * self.page_size]
            headers = {}
            if (page + 1) * self.page_size < len(everyone):
                origin = self.hostile_link or self.url
                headers["Link"] = f'<{origin}/{where}/memberships?page={page + 1}>; rel="next"'
            return JSONResponse({"id": f"{self.url}/{where}/memberships", "context": {"id": where},
                                 "members": chunk},
                                headers=headers, media_type="application/vnd.ims.lti-nrps.v2.membershipcontainer+json")

        return Starlette(routes=[Route("/jwks", jwks), Route("/auth", auth), Route("/token", token, methods=["POST"]),
                                 Route("/{context}/lineitems", lineitems, methods=["GET", "POST"]),
                                 Route("/{context}/lineitems/{n}/lineitem/scores", scores, methods=["POST"]),
                                 Route("/{context}/memberships", memberships)])


def member(user_id: str, sis: str | None, name: str, roles: list[str], email: str | None = None,
           context: str = COURSE, login: str | None = None) -> dict[str, Any]:
    """A member as NRPS 2.0's example lists one, of one of the platform's courses."""
    return {"status": "Active", "name": name, "picture": "https://platform.example.edu/jane.jpg",
            "given_name": name.split()[0], "family_name": name.split()[-1], "email": email,
            "user_id": user_id, "lis_person_sourcedid": sis, "roles": roles, "message_id": str(uuid.uuid4()),
            "context": context, "login": login}


class Recorder:
    """Another origin, which records every request's bearer token (where a roster's hostile next page points)."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def app(self) -> Any:
        from starlette.applications import Starlette
        from starlette.responses import JSONResponse
        from starlette.routing import Route

        async def anything(request: Any) -> Any:
            self.seen.append(request.headers.get("authorization", ""))
            return JSONResponse({"members": []})

        return Starlette(routes=[Route("/{path:path}", anything)])


def registration(url: str) -> dict[str, Any]:
    """The platform as the course registers it in lti.json (pylti1p3's format)."""
    return {ISSUER: [{"default": True, "client_id": CLIENT_ID, "auth_login_url": f"{url}/auth",
                      "auth_token_url": f"{url}/token", "key_set_url": f"{url}/jwks", "private_key_file": "",
                      "public_key_file": "", "deployment_ids": [DEPLOYMENT]}]}
