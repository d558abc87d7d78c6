import { render } from 'preact';
import { useMemo, useState } from 'preact/hooks';
import { LocationProvider, Router, Route } from 'preact-iso';
import { SessionContext, clientFor, forgetKey, storedKey, type Session } from './api.ts';
import { AccountBar } from './components/AccountBar.tsx';
import { SignIn } from './pages/SignIn.tsx';
import { Browse } from './pages/Browse.tsx';
import { Release } from './pages/Release.tsx';
import { RunPage } from './pages/Run.tsx';
import { Runs } from './pages/Runs.tsx';
import { Experiments } from './pages/Experiments.tsx';
import { ExperimentPage } from './pages/Experiment.tsx';
import { Hosting } from './pages/Hosting.tsx';
import './styles.css';

function NotFound() {
  return <main id="main"><h1>Not found</h1><p>No page here. <a href="/console/">Browse labs</a>.</p></main>;
}

function Console() {
  const [key, setKey] = useState(storedKey());
  const [accountVersion, setAccountVersion] = useState(0);
  const session = useMemo<Session | null>(() => key ? {
    client: clientFor(key),
    refreshAccount: () => setAccountVersion((v) => v + 1),
    signOut: () => { forgetKey(); setKey(null); },
  } : null, [key]);
  if (!session) return <SignIn onSignedIn={setKey} />;
  return (
    <SessionContext.Provider value={session}>
      <a class="skip" href="#main">Skip to content</a>
      <header>
        <a class="brand" href="/console/">Silico</a>
        <nav aria-label="Sections">
          <a href="/console/">Browse</a>
          <a href="/console/runs">Runs</a>
          <a href="/console/experiments">Experiments</a>
          <a href="/console/hosting">Hosting</a>
        </nav>
      </header>
      <AccountBar version={accountVersion} />
      <Router>
        <Route path="/console/" component={Browse} />
        <Route path="/console/hub/:namespace/:name/:version" component={Release} />
        <Route path="/console/runs" component={Runs} />
        <Route path="/console/runs/:id" component={RunPage} />
        <Route path="/console/experiments" component={Experiments} />
        <Route path="/console/experiments/:id" component={ExperimentPage} />
        <Route path="/console/hosting" component={Hosting} />
        <Route default component={NotFound} />
      </Router>
    </SessionContext.Provider>
  );
}

render(<LocationProvider><Console /></LocationProvider>, document.getElementById('app')!);
