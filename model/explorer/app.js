// ckpt-model's Explorer script: stateright's Explorer script (ui/app.js of
// stateright 0.31), changed for ckpt: plain-text property marks instead of
// emoji, "not decided yet" instead of "Searching" while the on-demand
// checker has not been run, the path of an address fetched at once (every
// prefix in parallel) with a loading line, and the violation of a step
// picked out of ckpt's step view.
//
// Stateright: MIT License, Copyright (c) 2018 Jonathan Nadal and other
// Stateright contributors (the permission notice is in index.htm).

/// Represents the checker status. Reloads periodically until checking completes.
function Status({done, state_count, unique_state_count, max_depth, model, properties, recent_path}) {
    let status = this;

    status.stateCount = state_count.toLocaleString();
    status.uniqueStateCount = unique_state_count.toLocaleString();
    status.maxDepth = max_depth.toLocaleString();
    status.model = model.replace(/[0-9A-Za-z_]+::/g, '');
    // The placeholder's `done` is a string: only `true` means done.
    done = done === true;
    status.progress = 'Done';
    status.checker = done
        ? 'done: every property is decided'
        : (unique_state_count > 1
            ? 'searching (properties are decided when it is done)'
            : 'not run (the steps you open are computed on demand)');
    if (!done) {
        status.progress = (recent_path || '').length < 100
            ? recent_path
            : recent_path.substring(0, 99 - 3) + '...';
    }
    status.properties = properties.map((p) => {
        return getProperty(p, done)
    });
    status.recentPath = recent_path;
}

/// Placeholder status.
Status.LOADING = new Status({
    done: 'loading...',
    state_count: 'loading...',
    unique_state_count: 'loading...',
    max_depth: 'loading...',
    model: 'loading...',
    properties: [],
    recent_path: 'loading...',
});

/// A property's mark in the status panel: plain text (no emoji font needed)
/// and whether it is good news, bad news or not decided.
function getProperty(p, done) {
    let expectation = p[0];
    let discoveryPath = p[2];
    let [mark, kind] = (() => {
        if (discoveryPath) {
            return expectation === 'Sometimes' ? ['[example]', 'good'] : ['[VIOLATED]', 'bad'];
        }
        if (!done) {
            return ['[undecided]', 'open'];
        }
        return expectation === 'Sometimes' ? ['[no example]', 'bad'] : ['[holds]', 'good'];
    })();
    return {
        expectation,
        name: p[1],
        discoveryPath,
        mark,
        markClass: 'ckpt-mark ckpt-mark-' + kind,
        summary: mark + ' ',
    };
}

function getPropertyForState(p, path) {
    let expectation = p[0];
    let discoveryPath = p[2];
    if (discoveryPath) {
        const dp = `/${discoveryPath}`
        const prefixOrSuffix = dp.indexOf(path) === 0 || path.indexOf(dp) === 0
        if (!prefixOrSuffix) {
            discoveryPath = ""
        }
    }

    const [icon, kind] = (() => {
        if (discoveryPath) {
            if (discoveryPath.length + 1 < path.length) {
                return ['[after it]', 'open'];
            } else if (discoveryPath.length + 1 > path.length) {
                return ['[before it]', 'open'];
            }
            return expectation === 'Sometimes' ? ['[example]', 'good'] : ['[VIOLATED]', 'bad'];
        }
        return ['[not here]', 'open'];
    })();

    return {
        expectation,
        name: p[1],
        discoveryPath,
        summary: icon + ' ',
        icon,
        markClass: 'ckpt-mark ckpt-mark-' + kind,
    };
}


/// Represents a model step. Only loads next steps on demand.
function Step({action, outcome, state, actionIndex, properties, prevStep, svg}) {
    let step = this;

    step.action = action || `Init ${actionIndex !== undefined ? actionIndex : 'unknown'}`;
    step.outcome = outcome;
    step.state = state;
    step.svg = svg;
    // ckpt's step view names a violation on a line of its own.
    step.violation = ((outcome || '').split('\n').find(l => l.trim().startsWith('VIOLATION:')) || '')
        .trim().replace(/^VIOLATION:\s*/, '');
    step.actionIndex = actionIndex;
    step.prevStep = prevStep;

    step.path = prevStep && actionIndex !== undefined ? prevStep.path + '/' + actionIndex : '';

    step.properties = properties.map((p) => {
        return getPropertyForState(p, step.path)
    });
    step.icons = step.properties.map((p) => {
        return p.icon
    }).join(' ')

    step.pathSteps = () => (prevStep ? prevStep.pathSteps() : []).concat([step]);
    step.nextSteps = ko.observableArray();
    step.computeOffsetTo = (dstStep) => {
        let offset = 0;
        for (let cursor = step; cursor; cursor = cursor.prevStep) {
            if (cursor == dstStep) {
                return offset;
            }
            ++offset;
        }
        return null;
    };
    step.computeUriWithOffset = (offset) => {
        return `#/steps${step.path}?offset=${offset}`;
    };
    step.fetchNextSteps = async () => {
        Step._NEXT_STEPS = Step._NEXT_STEPS || {};
        let cached = Step._NEXT_STEPS[step.path];
        if (cached) {
            return cached;
        }

        Step._NEXT_STEPS[step.path] = Step.fetchRaw(step.path)
            .then((nextSteps, err) => {
                if (err) {
                    console.log(err);
                }
                console.log('Response received.', {path: step.path, nextSteps});
                return nextSteps.map((nextStep, i) => new Step({
                    action: nextStep.action || `Init ${i}`,
                    outcome: nextStep.outcome,
                    state: nextStep.state,
                    svg: nextStep.svg,
                    actionIndex: nextStep.actionIndex,
                    properties: nextStep.properties,
                    prevStep: step,
                }));
            })
            .catch(err => {
                console.log('Failed. Removing from cache.', {path: step.path, err});
                Step._NEXT_STEPS[step.path] = undefined;
            });
        let nextSteps = await Step._NEXT_STEPS[step.path];
        step.nextSteps(nextSteps);
        return nextSteps;
    };
    step.isIgnored = 'undefined' === typeof step.state;
}

/// The raw steps after `path`, fetched once (an address's prefixes are all
/// requested at once, then built in order).
Step.fetchRaw = (path) => {
    Step._RAW = Step._RAW || {};
    if (!Step._RAW[path]) {
        Step._RAW[path] = fetch(`/.states${path}`).then(r => r.json()).catch(err => {
            Step._RAW[path] = undefined;
            throw err;
        });
    }
    return Step._RAW[path];
};

/// Special step that points to the init steps.
Step.PRE_INIT = new Step({
    action: 'Pre-init',
    state: 'No step selected: take "Init 0" under Next Action Choices (left).',
    actionIndex: undefined,
    properties: [],
    prevStep: null,
});

/// Manages app state.
function App() {
    let app = this;

    app.selectedStep = ko.observable(Step.PRE_INIT);
    app.farthestStep = ko.observable(Step.PRE_INIT);
    app.isCompact = ko.observable(false);
    app.isCompleteState = ko.observable(false);
    app.showPerStateProperties = ko.observable(false);
    app.showCurrentStateProperties = ko.observable(false);
    app.isSameStateAsSelected = (step) => step.state == app.selectedStep().state;
    app.onKeyDown = (data, ev) => {
        switch (ev.keyCode) {
            case 38: // up arrow
            case 75: { // k (vim style)
                let offset = app.farthestStep().computeOffsetTo(app.selectedStep());
                offset = Math.min(offset + 1, app.farthestStep().pathSteps().length - 1);
                window.location = app.farthestStep().computeUriWithOffset(offset);
                break;
            }
            case 40: // down arrow
            case 74: { // k (vim style)
                let offset = app.farthestStep().computeOffsetTo(app.selectedStep());
                offset = Math.max(offset - 1, 0);
                window.location = app.farthestStep().computeUriWithOffset(offset);
                break;
            }
            default:
                return true;
        }
    };
    app.status = ko.observable(Status.LOADING);
    app.loading = ko.observable('');

    window.onhashchange = prepareView;
    window.onhashchange();
    refreshStatus();

    app.refreshSoon = () => setTimeout(refreshStatus, 500);

    async function refreshStatus() {
        console.log('Refreshing status.');
        let response = await fetch('/.status');
        let json = await response.json();
        console.log({json});
        app.status(new Status(json));
        if (!json.done) {
            setTimeout(refreshStatus, 5000);
        }
    }

    async function prepareView() {
        let hash = window.location.hash;
        console.log('Hash changed. Preparing view.', {hash});

        // Canonicalize, then extract view name and remaining components.
        hash = hash || '#/steps';

        let [path, queryString] = hash.split('?');
        console.log({path, queryString});

        let components = path.split('/'); // e.g. ['#', 'steps', 4, 2]
        let view = components[1];
        components.shift();
        components.shift();

        switch (view) {
            case 'steps':
                // Every prefix of the path is requested at once.
                let prefix = '';
                Step.fetchRaw(prefix);
                for (let c of components.filter(c => c !== '')) {
                    prefix += '/' + c;
                    Step.fetchRaw(prefix);
                }
                let total = components.filter(c => c !== '').length;
                let step = Step.PRE_INIT;
                let taken = 0;
                while (true) {
                    app.loading(total > 0 ? `Loading the path: step ${taken} of ${total}...` : 'Loading...');
                    let nextSteps = await step.fetchNextSteps();
                    let nextActionIndex = components.shift();
                    if (!nextActionIndex) {
                        app.selectedStep(step);
                        app.farthestStep(step);
                        break;
                    }
                    let next = (nextSteps || []).find(s => s.actionIndex == parseInt(nextActionIndex));
                    if (!next) {
                        app.selectedStep(step);
                        app.farthestStep(step);
                        app.loading(`No action ${nextActionIndex} after step ${taken}: the address is of another model (other flags?)`);
                        return;
                    }
                    step = next;
                    taken += 1;
                }
                app.loading('');
                break;
            default:
                throw new Error(`Invalid view: '${view}'`);
        }

        let pairs = (queryString || '').split('&');
        for (let pair of pairs) {
            let [qsKey, qsVal] = pair.split('=');
            console.log({qsKey, qsVal});

            switch (qsKey) {
                case 'offset':
                    for (let offset = parseInt(qsVal); offset > 0; --offset) {
                        app.selectedStep(app.selectedStep().prevStep);
                    }
                    break;
            }
        }
    }
}

async function runToCompletion() {
    await fetch('/.runtocompletion', {method: 'POST'});
    window.app.refreshSoon();
}

window.app = new App();
ko.applyBindings(window.app);
